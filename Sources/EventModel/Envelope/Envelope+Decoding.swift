// One NDJSON line → Envelope, with the JSON scanner. Member order does not matter; unknown
// members are ignored so that a newer writer's additions do not break an older reader. The first
// occurrence of a repeated key wins. Keys are matched as bytes and members are read in place, so
// decoding allocates little more than the envelope's own strings.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Envelope {
    /// Decodes one envelope line written by `encoded()`; member order does not matter.
    ///
    /// - Throws: `EnvelopeError` naming the first missing or invalid member.
    package init(decoding line: some Collection<UInt8>) throws(EnvelopeError) {
        let document: JSONDocument
        do throws(JSONError) {
            document = try JSONDocument(parsing: Array(line), maxDepth: Self.maxDecodingDepth)
        } catch {
            throw .invalidJSON(message: error.reason.rawValue, byteOffset: error.byteOffset)
        }
        let root = document.root
        guard root.kind == .object else { throw .notAnObject }
        let fields = EnvelopeFields(root)
        guard let versionValue = fields[.v] else { throw .missingField("v") }
        guard let version = versionValue.int64 else { throw .invalidField("v") }
        guard version == Int64(Envelope.version) else { throw .unsupportedVersion(Int(clamping: version)) }
        guard let kind: EventKind = try fields.optionalEnum(.kind) else { throw .missingField("kind") }
        self.init(
            id: try fields.required(.id), app: try fields.required(.app), kind: kind,
            time: try fields.requiredTime(.time), receivedAt: try fields.requiredTime(.receivedAt),
            clock: try fields.requiredEnum(.clock))
        name = try fields.string(.name)
        device = try fields.string(.device)
        platform = try fields.optionalEnum(.platform)
        sdk = try fields.string(.sdk)
        clientTimestamp = try fields.time(.clientTimestamp)
        sentAt = try fields.time(.sentAt)
        attribution = try fields.attribution()
        clickID = try fields.string(.clickID)
        data = fields.raw(.data)
        metadata = fields.raw(.metadata)
        url = try fields.string(.url)
        path = try fields.string(.path)
        query = try fields.query()
        clickKind = try fields.optionalEnum(.clickKind)
        userAgent = try fields.string(.userAgent)
        ip = try fields.string(.ip)
        referrer = try fields.string(.referrer)
        method = try fields.optionalEnum(.method)
        if let value = fields[.score], !value.isNull {
            guard let score = value.double else { throw .invalidField("score") }
            self.score = score
        }
    }
}

/// The members of one envelope line, first occurrence of each key, as tape indices.
private struct EnvelopeFields {
    enum Key: Int, CaseIterable {
        case v, id, app, kind, time, clock, name, device, platform, sdk, attribution, data, metadata
        case url, path, query, ip, referrer, method, score
        case receivedAt, clientTimestamp, sentAt, clickID, clickKind, userAgent

        var name: StaticString {
            switch self {
            case .v: "v"
            case .id: "id"
            case .app: "app"
            case .kind: "kind"
            case .time: "time"
            case .clock: "clock"
            case .name: "name"
            case .device: "device"
            case .platform: "platform"
            case .sdk: "sdk"
            case .attribution: "attribution"
            case .data: "data"
            case .metadata: "metadata"
            case .url: "url"
            case .path: "path"
            case .query: "query"
            case .ip: "ip"
            case .referrer: "referrer"
            case .method: "method"
            case .score: "score"
            case .receivedAt: "received_at"
            case .clientTimestamp: "client_ts"
            case .sentAt: "sent_at"
            case .clickID: "click_id"
            case .clickKind: "click_kind"
            case .userAgent: "user_agent"
            }
        }

        var text: String { name.description }

        /// Keys grouped by length (`allCases` builds a new array on every call).
        static let byLength: [[Key]] = {
            var table = [[Key]](repeating: [], count: 16)
            for key in allCases { table[key.name.utf8CodeUnitCount].append(key) }
            return table
        }()

        static let count = allCases.count

        static func named(_ bytes: UnsafeBufferPointer<UInt8>) -> Key? {
            guard let base = bytes.baseAddress, bytes.count < byLength.count else { return nil }
            for key in byLength[bytes.count] where memcmp(key.name.utf8Start, base, bytes.count) == 0 {
                return key
            }
            return nil
        }
    }

    let document: JSONDocument
    var slots: [Int32] = Array(repeating: -1, count: Key.count)

    init(_ root: JSONValue) {
        document = root.document
        for (key, value) in root.members {
            guard let field = key.withStringBytes({ Key.named($0) }) ?? nil else { continue }
            if slots[field.rawValue] < 0 { slots[field.rawValue] = Int32(value.index) }
        }
    }

    subscript(key: Key) -> JSONValue? {
        let index = slots[key.rawValue]
        return index < 0 ? nil : JSONValue(document: document, index: Int(index))
    }

    func string(_ key: Key) throws(EnvelopeError) -> String? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let text = value.string else { throw .invalidField(key.text) }
        return text
    }

    func required(_ key: Key) throws(EnvelopeError) -> String {
        guard let text = try string(key) else { throw .missingField(key.text) }
        return text
    }

    func time(_ key: Key) throws(EnvelopeError) -> Timestamp? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let parsed = value.withStringBytes({ Timestamp.parse($0) }), let microseconds = parsed else {
            throw .invalidField(key.text)
        }
        return Timestamp(microseconds: microseconds)
    }

    func requiredTime(_ key: Key) throws(EnvelopeError) -> Timestamp {
        guard let time = try time(key) else { throw .missingField(key.text) }
        return time
    }

    func optionalEnum<T: RawRepresentable<String>>(_ key: Key) throws(EnvelopeError) -> T? {
        guard let text = try string(key) else { return nil }
        guard let value = T(rawValue: text) else { throw .invalidField(key.text) }
        return value
    }

    func requiredEnum<T: RawRepresentable<String>>(_ key: Key) throws(EnvelopeError) -> T {
        guard let value: T = try optionalEnum(key) else { throw .missingField(key.text) }
        return value
    }

    func raw(_ key: Key) -> [UInt8]? {
        guard let value = self[key] else { return nil }
        return Array(value.rawBytes)
    }

    func attribution() throws(EnvelopeError) -> Attribution? {
        guard let value = self[.attribution], !value.isNull else { return nil }
        guard value.kind == .object else { throw .invalidField("attribution") }
        var attribution = Attribution()
        for (key, member) in value.members where !member.isNull {
            guard let text = member.string else { throw .invalidField("attribution") }
            if key.stringEquals("install_click_id") {
                if attribution.installClickID == nil { attribution.installClickID = text }
            } else if key.stringEquals("open_click_id") {
                if attribution.openClickID == nil { attribution.openClickID = text }
            } else if key.stringEquals("open_type") {
                if attribution.openType == nil { attribution.openType = text }
            }
        }
        return attribution
    }

    func query() throws(EnvelopeError) -> [QueryParameter]? {
        guard let value = self[.query], !value.isNull else { return nil }
        guard value.kind == .object else { throw .invalidField("query") }
        var parameters: [QueryParameter] = []
        for (key, v) in value.members {
            guard let name = key.string, let text = v.string else { throw .invalidField("query") }
            parameters.append(QueryParameter(name: name, value: text))
        }
        return parameters
    }
}
