// One NDJSON line → Envelope, with the JSON scanner. Member order does not matter; unknown
// members are ignored so that a newer writer's additions do not break an older reader.

extension Envelope {
    /// Decodes one envelope line written by `encoded()`; member order does not matter.
    ///
    /// - Throws: `EnvelopeError` naming the first missing or invalid member.
    package init(decoding line: some Collection<UInt8>) throws(EnvelopeError) {
        let document: JSONDocument
        do throws(JSONError) {
            document = try JSONDocument(parsing: Array(line), maxDepth: 512)
        } catch {
            throw .invalidJSON(message: error.reason.rawValue, byteOffset: error.byteOffset)
        }
        let root = document.root
        guard root.kind == .object else { throw .notAnObject }
        var fields = EnvelopeFields()
        for (key, value) in root.members {
            guard let name = key.string, let field = EnvelopeFields.Key(rawValue: name) else { continue }
            if fields.values[field] == nil { fields.values[field] = value }
        }
        guard let version = fields[.v]?.int64 else { throw .missingField("v") }
        guard version == Int64(Envelope.version) else { throw .unsupportedVersion(Int(clamping: version)) }
        guard let kindText = try fields.string(.kind), let kind = EventKind(rawValue: kindText) else {
            throw fields[.kind] == nil ? .missingField("kind") : .invalidField("kind")
        }
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

/// The members of one envelope line, first occurrence of each key.
private struct EnvelopeFields {
    enum Key: String, CaseIterable {
        case v, id, app, kind, time, clock, name, device, platform, sdk, attribution, data, metadata
        case url, path, query, ip, referrer, method, score
        case receivedAt = "received_at", clientTimestamp = "client_ts", sentAt = "sent_at"
        case clickID = "click_id", clickKind = "click_kind", userAgent = "user_agent"
    }

    var values: [Key: JSONValue] = [:]

    subscript(key: Key) -> JSONValue? { values[key] }

    func string(_ key: Key) throws(EnvelopeError) -> String? {
        guard let value = values[key], !value.isNull else { return nil }
        guard let text = value.string else { throw .invalidField(key.rawValue) }
        return text
    }

    func required(_ key: Key) throws(EnvelopeError) -> String {
        guard let text = try string(key) else { throw .missingField(key.rawValue) }
        return text
    }

    func time(_ key: Key) throws(EnvelopeError) -> Timestamp? {
        guard let value = values[key], !value.isNull else { return nil }
        guard let bytes = value.stringBytes, let time = Timestamp(iso8601: bytes) else {
            throw .invalidField(key.rawValue)
        }
        return time
    }

    func requiredTime(_ key: Key) throws(EnvelopeError) -> Timestamp {
        guard let time = try time(key) else { throw .missingField(key.rawValue) }
        return time
    }

    func optionalEnum<T: RawRepresentable<String>>(_ key: Key) throws(EnvelopeError) -> T? {
        guard let text = try string(key) else { return nil }
        guard let value = T(rawValue: text) else { throw .invalidField(key.rawValue) }
        return value
    }

    func requiredEnum<T: RawRepresentable<String>>(_ key: Key) throws(EnvelopeError) -> T {
        guard let value: T = try optionalEnum(key) else { throw .missingField(key.rawValue) }
        return value
    }

    func raw(_ key: Key) -> [UInt8]? {
        guard let value = values[key] else { return nil }
        return Array(value.rawBytes)
    }

    func attribution() throws(EnvelopeError) -> Attribution? {
        guard let value = values[.attribution], !value.isNull else { return nil }
        guard value.kind == .object else { throw .invalidField("attribution") }
        func member(_ name: String) throws(EnvelopeError) -> String? {
            guard let v = value[name], !v.isNull else { return nil }
            guard let text = v.string else { throw .invalidField("attribution") }
            return text
        }
        return Attribution(
            installClickID: try member("install_click_id"), openClickID: try member("open_click_id"),
            openType: try member("open_type"))
    }

    func query() throws(EnvelopeError) -> [QueryParameter]? {
        guard let value = values[.query], !value.isNull else { return nil }
        guard value.kind == .object else { throw .invalidField("query") }
        var parameters: [QueryParameter] = []
        for (key, v) in value.members {
            guard let name = key.string, let text = v.string else { throw .invalidField("query") }
            parameters.append(QueryParameter(name: name, value: text))
        }
        return parameters
    }
}
