// Envelope → one NDJSON line. Key order follows docs/envelope.md: the members every kind has,
// then the kind's members; absent optional members are omitted.

extension Envelope {
    /// The envelope as one line of JSON, without a trailing newline.
    package func encoded() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(256 + (data?.count ?? 0) + (metadata?.count ?? 0))
        encode(into: &buffer)
        return buffer
    }

    /// Appends the envelope as one line of JSON (no newline) to a reusable buffer.
    package func encode(into buffer: inout [UInt8]) {
        JSONWriter.appendRaw(#"{"v":1,"id":"#, to: &buffer)
        JSONWriter.appendString(id, to: &buffer)
        JSONWriter.appendRaw(#","app":"#, to: &buffer)
        JSONWriter.appendString(app, to: &buffer)
        JSONWriter.appendRaw(#","kind":"#, to: &buffer)
        JSONWriter.appendString(kind.rawValue, to: &buffer)
        JSONWriter.appendRaw(#","time":"#, to: &buffer)
        JSONWriter.appendTimestamp(time, to: &buffer)
        JSONWriter.appendRaw(#","received_at":"#, to: &buffer)
        JSONWriter.appendTimestamp(receivedAt, to: &buffer)
        JSONWriter.appendRaw(#","clock":"#, to: &buffer)
        JSONWriter.appendString(clock.rawValue, to: &buffer)
        switch kind {
        case .event, .retention:
            encodeActionMembers(into: &buffer)
            encodeLinkMembers(into: &buffer)
        case .click, .match:
            encodeLinkMembers(into: &buffer)
            encodeActionMembers(into: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// name, device, platform, sdk, client_ts, sent_at, attribution, click_id, data, metadata.
    private func encodeActionMembers(into buffer: inout [UInt8]) {
        if let name { member(",\"name\":", name, &buffer) }
        if let device { member(",\"device\":", device, &buffer) }
        if kind == .event || kind == .retention, let platform { member(",\"platform\":", platform.rawValue, &buffer) }
        if let sdk { member(",\"sdk\":", sdk, &buffer) }
        if let clientTimestamp {
            JSONWriter.appendRaw(#","client_ts":"#, to: &buffer)
            JSONWriter.appendTimestamp(clientTimestamp, to: &buffer)
        }
        if let sentAt {
            JSONWriter.appendRaw(#","sent_at":"#, to: &buffer)
            JSONWriter.appendTimestamp(sentAt, to: &buffer)
        }
        if let attribution {
            JSONWriter.appendRaw(#","attribution":{"install_click_id":"#, to: &buffer)
            JSONWriter.appendOptionalString(attribution.installClickID, to: &buffer)
            JSONWriter.appendRaw(#","open_click_id":"#, to: &buffer)
            JSONWriter.appendOptionalString(attribution.openClickID, to: &buffer)
            JSONWriter.appendRaw(#","open_type":"#, to: &buffer)
            JSONWriter.appendOptionalString(attribution.openType, to: &buffer)
            buffer.append(UInt8(ascii: "}"))
        }
        if kind == .event || kind == .retention, let clickID { member(",\"click_id\":", clickID, &buffer) }
        if let data {
            JSONWriter.appendRaw(#","data":"#, to: &buffer)
            buffer.append(contentsOf: data)
        }
        if let metadata {
            JSONWriter.appendRaw(#","metadata":"#, to: &buffer)
            buffer.append(contentsOf: metadata)
        }
    }

    /// click_id, url, path, query, platform, click_kind, user_agent, ip, referrer, method, score.
    private func encodeLinkMembers(into buffer: inout [UInt8]) {
        let isLink = kind == .click || kind == .match
        if isLink, let clickID { member(",\"click_id\":", clickID, &buffer) }
        if let url { member(",\"url\":", url, &buffer) }
        if let path { member(",\"path\":", path, &buffer) }
        if let query {
            JSONWriter.appendRaw(#","query":{"#, to: &buffer)
            for (k, parameter) in query.enumerated() {
                if k > 0 { buffer.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(parameter.name, to: &buffer)
                buffer.append(UInt8(ascii: ":"))
                JSONWriter.appendString(parameter.value, to: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
        if isLink, let platform { member(",\"platform\":", platform.rawValue, &buffer) }
        if let clickKind { member(",\"click_kind\":", clickKind.rawValue, &buffer) }
        if let userAgent { member(",\"user_agent\":", userAgent, &buffer) }
        if let ip { member(",\"ip\":", ip, &buffer) }
        if let referrer { member(",\"referrer\":", referrer, &buffer) }
        if let method { member(",\"method\":", method.rawValue, &buffer) }
        if let score {
            JSONWriter.appendRaw(#","score":"#, to: &buffer)
            JSONWriter.appendNumber(score, to: &buffer)
        }
    }

    @inline(__always) private func member(_ key: StaticString, _ value: String, _ buffer: inout [UInt8]) {
        JSONWriter.appendRaw(key, to: &buffer)
        JSONWriter.appendString(value, to: &buffer)
    }
}
