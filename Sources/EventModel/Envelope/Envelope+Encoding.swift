// Envelope → one NDJSON line. Key order follows docs/envelope.md: the members every kind has,
// then the kind's members; absent optional members are omitted.
//
// Speed: the line's length is bounded first (`lengthBound`), the buffer grows once, and the
// members are written through a raw cursor (JSONWriter).

extension Envelope {
    /// The envelope as one line of JSON, without a trailing newline.
    package func encoded() -> [UInt8] {
        var buffer: [UInt8] = []
        encode(into: &buffer)
        return buffer
    }

    /// Appends the envelope as one line of JSON (no newline) to a reusable buffer.
    package func encode(into buffer: inout [UInt8]) {
        let bound = lengthBound
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: bound))
        let written = buffer.withUnsafeMutableBufferPointer { all in
            let base = all.baseAddress! + start
            var writer = JSONWriter(base)
            write(to: &writer)
            return writer.cursor - base
        }
        precondition(written <= bound, "envelope length bound exceeded")
        buffer.removeLast(bound - written)
    }

    /// An upper bound of the encoded length: keys and fixed parts, plus each string escaped at worst.
    private var lengthBound: Int {
        // 512 covers every key, literal value and punctuation (about 390 bytes when all are present).
        var total = 512 + 4 * JSONWriter.timestampBound
        @inline(__always) func add(_ text: String?) {
            if let text { total += JSONWriter.bound(of: text) }
        }
        add(id)
        add(app)
        add(name)
        add(device)
        add(sdk)
        add(clickID)
        add(url)
        add(path)
        add(userAgent)
        add(ip)
        add(referrer)
        if let attribution {
            add(attribution.installClickID)
            add(attribution.openClickID)
            add(attribution.openType)
        }
        if let query {
            for parameter in query {
                total += JSONWriter.bound(of: parameter.name) + JSONWriter.bound(of: parameter.value) + 2
            }
        }
        if let score { total += JSONWriter.numberText(score).utf8.count }
        total += (data?.count ?? 0) + (metadata?.count ?? 0)
        return total
    }

    private func write(to w: inout JSONWriter) {
        w.raw(#"{"v":1,"id":"#)
        w.string(id)
        w.raw(#","app":"#)
        w.string(app)
        w.raw(#","kind":""#)
        switch kind {
        case .event: w.raw(#"event""#)
        case .retention: w.raw(#"retention""#)
        case .click: w.raw(#"click""#)
        case .match: w.raw(#"match""#)
        }
        w.raw(#","time":"#)
        w.timestamp(time)
        w.raw(#","received_at":"#)
        w.timestamp(receivedAt)
        w.raw(#","clock":""#)
        switch clock {
        case .ok: w.raw(#"ok""#)
        case .skewCorrected: w.raw(#"skew_corrected""#)
        case .futureClamped: w.raw(#"future_clamped""#)
        }
        switch kind {
        case .event, .retention:
            writeActionMembers(to: &w)
            writeLinkMembers(to: &w)
        case .click, .match:
            writeLinkMembers(to: &w)
            writeActionMembers(to: &w)
        }
        w.byte(UInt8(ascii: "}"))
    }

    /// name, device, platform, sdk, client_ts, sent_at, attribution, click_id, data, metadata.
    private func writeActionMembers(to w: inout JSONWriter) {
        let isAction = kind == .event || kind == .retention
        if let name { member(&w, #","name":"#, name) }
        if let device { member(&w, #","device":"#, device) }
        if isAction, let platform { writePlatform(platform, to: &w) }
        if let sdk { member(&w, #","sdk":"#, sdk) }
        if let clientTimestamp {
            w.raw(#","client_ts":"#)
            w.timestamp(clientTimestamp)
        }
        if let sentAt {
            w.raw(#","sent_at":"#)
            w.timestamp(sentAt)
        }
        if let attribution {
            w.raw(#","attribution":{"install_click_id":"#)
            w.optionalString(attribution.installClickID)
            w.raw(#","open_click_id":"#)
            w.optionalString(attribution.openClickID)
            w.raw(#","open_type":"#)
            w.optionalString(attribution.openType)
            w.byte(UInt8(ascii: "}"))
        }
        if isAction, let clickID { member(&w, #","click_id":"#, clickID) }
        if let data {
            w.raw(#","data":"#)
            w.rawJSON(data)
        }
        if let metadata {
            w.raw(#","metadata":"#)
            w.rawJSON(metadata)
        }
    }

    /// click_id, url, path, query, platform, click_kind, user_agent, ip, referrer, method, score.
    private func writeLinkMembers(to w: inout JSONWriter) {
        let isLink = kind == .click || kind == .match
        if isLink, let clickID { member(&w, #","click_id":"#, clickID) }
        if let url { member(&w, #","url":"#, url) }
        if let path { member(&w, #","path":"#, path) }
        if let query {
            w.raw(#","query":{"#)
            for (k, parameter) in query.enumerated() {
                if k > 0 { w.byte(UInt8(ascii: ",")) }
                w.string(parameter.name)
                w.byte(UInt8(ascii: ":"))
                w.string(parameter.value)
            }
            w.byte(UInt8(ascii: "}"))
        }
        if isLink, let platform { writePlatform(platform, to: &w) }
        if let clickKind {
            w.raw(#","click_kind":"#)
            w.raw(clickKind == .web ? #""web""# : #""universal_link""#)
        }
        if let userAgent { member(&w, #","user_agent":"#, userAgent) }
        if let ip { member(&w, #","ip":"#, ip) }
        if let referrer { member(&w, #","referrer":"#, referrer) }
        if let method {
            w.raw(#","method":"#)
            w.raw(method == .deterministic ? #""deterministic""# : #""probabilistic""#)
        }
        if let score {
            w.raw(#","score":"#)
            w.raw(Array(JSONWriter.numberText(score).utf8))
        }
    }

    private func writePlatform(_ platform: Platform, to w: inout JSONWriter) {
        switch platform {
        case .ios: w.raw(#","platform":"ios""#)
        case .android: w.raw(#","platform":"android""#)
        case .desktop: w.raw(#","platform":"desktop""#)
        case .unknown: w.raw(#","platform":"unknown""#)
        }
    }

    @inline(__always) private func member(_ w: inout JSONWriter, _ key: StaticString, _ value: String) {
        w.raw(key)
        w.string(value)
    }
}
