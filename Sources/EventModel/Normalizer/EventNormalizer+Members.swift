// Reading and checking individual members of the event being normalised.

extension EventNormalizer {
    /// The event must be an object within the size and depth limits.
    func checkShape(_ value: JSONValue) throws(Rejection) {
        guard value.kind == .object else { throw Rejection(.invalidEvent, "the event must be a JSON object") }
        let size = value.byteRange.count
        guard size <= limits.maxEventBytes else {
            throw Rejection(.eventTooLarge, "the event is \(size) bytes, at most \(limits.maxEventBytes) are allowed")
        }
        let depth = value.nestingDepth
        guard depth <= limits.maxDepth else {
            throw Rejection(.tooDeep, "the event nests \(depth) levels deep, at most \(limits.maxDepth) are allowed")
        }
    }

    func optionalStringBytes(_ field: EventField) throws(Rejection) -> [UInt8]? {
        guard let value = fields[field], !value.isNull else { return nil }
        guard let bytes = value.stringBytes else { throw Rejection(.invalidType, "\"\(field.key)\" must be a string") }
        return bytes
    }

    func optionalString(_ field: EventField) throws(Rejection) -> String? {
        try optionalStringBytes(field).map { String(decoding: $0, as: UTF8.self) }
    }

    func requiredStringBytes(_ field: EventField, name: String? = nil) throws(Rejection) -> [UInt8] {
        guard let bytes = try optionalStringBytes(field) else {
            throw Rejection(.missingField, "\"\(name ?? field.key.description)\" is required")
        }
        return bytes
    }

    func requiredTimestamp() throws(Rejection) -> Timestamp {
        let bytes = try requiredStringBytes(.timestamp)
        guard let time = Timestamp(iso8601: bytes) else {
            throw Rejection(.invalidTimestamp, "\"timestamp\" must be ISO-8601 with a zone, e.g. 2026-06-01T10:20:30.123Z")
        }
        return time
    }

    /// The device id: 1 to 128 bytes without control characters, lowercased when UUID-shaped.
    func deviceID() throws(Rejection) -> String {
        var bytes = try requiredStringBytes(.deviceID)
        guard !bytes.isEmpty, bytes.count <= Self.maxIdentifierBytes,
            !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F })
        else {
            throw Rejection(.invalidDeviceID, "\"device_id\" must be 1 to \(Self.maxIdentifierBytes) bytes without control characters")
        }
        if DeviceID.isUUIDShaped(bytes) { DeviceID.lowercaseASCII(&bytes) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The client's id: the first of event_id, message_id, messageId, insert_id, uuid present.
    func clientEventID() throws(Rejection) -> String? {
        for field in EventField.idFields {
            guard let value = fields[field], !value.isNull else { continue }
            guard let bytes = value.stringBytes else { throw Rejection(.invalidType, "\"\(field.key)\" must be a string") }
            guard !bytes.isEmpty, bytes.count <= Self.maxIdentifierBytes,
                !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }),
                !(bytes.count >= 2 && bytes[0] == UInt8(ascii: "h") && bytes[1] == UInt8(ascii: ":"))
            else {
                throw Rejection(
                    .invalidEventID,
                    "\"\(field.key)\" must be 1 to \(Self.maxIdentifierBytes) bytes without control characters, not starting with \"h:\"")
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        return nil
    }

    /// Raw JSON of `data`/`metadata`; `null` counts as absent.
    func rawJSON(_ field: EventField) throws(Rejection) -> [UInt8]? {
        guard let value = fields[field], !value.isNull else { return nil }
        return Array(value.rawBytes)
    }

    func attribution() throws(Rejection) -> Attribution? {
        guard let value = fields[.attribution], !value.isNull else { return nil }
        guard value.kind == .object else { throw Rejection(.invalidType, "\"attribution\" must be an object") }
        func member(_ name: String) throws(Rejection) -> String? {
            guard let member = value[name], !member.isNull else { return nil }
            guard let text = member.string else { throw Rejection(.invalidType, "\"attribution.\(name)\" must be a string or null") }
            return text
        }
        return Attribution(
            installClickID: try member("install_click_id"), openClickID: try member("open_click_id"),
            openType: try member("open_type"))
    }
}

extension EventNormalizer {
    /// The `X-SDK` header, else the body's `sdk` string; an unusable body value is ignored with a warning.
    mutating func sdk(index: Int) -> String? {
        if let header = context.sdkHeader, !header.isEmpty { return header }
        guard let value = fields[.sdk], !value.isNull else { return nil }
        guard let text = value.string, !text.isEmpty, text.utf8.count <= Self.maxIdentifierBytes else {
            result.warnings.append("event \(index): \"sdk\" is not a string of 1 to \(Self.maxIdentifierBytes) bytes and was ignored")
            return nil
        }
        return text
    }

    /// Applies the clock rules, warning when a time is clamped.
    mutating func resolveTime(client: Timestamp, index: Int) -> (Timestamp, ClockStatus) {
        let (time, clock) = ClockRule.resolve(client: client, sentAt: sentAt, receivedAt: context.receivedAt)
        if clock == .futureClamped {
            result.warnings.append("event \(index): timestamp is more than 24 hours ahead of the server clock; time set to received_at")
        }
        return (time, clock)
    }

    /// `"h:"` + the hash of the app and the fields `body` appends.
    mutating func hashedID(_ body: (inout EventHash) -> Void) -> String {
        hash.reset()
        hash.append(context.appID)
        body(&hash)
        return hash.eventID
    }
}

/// Device id normalisation.
enum DeviceID {
    /// True for `8-4-4-4-12` hex digits in any case.
    static func isUUIDShaped(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 36 else { return false }
        for (k, b) in bytes.enumerated() {
            if k == 8 || k == 13 || k == 18 || k == 23 {
                guard b == UInt8(ascii: "-") else { return false }
            } else {
                guard hexValue(b) != nil else { return false }
            }
        }
        return true
    }

    static func lowercaseASCII(_ bytes: inout [UInt8]) {
        for k in bytes.indices where bytes[k] &- 65 < 26 { bytes[k] |= 0x20 }
    }
}

extension Platform {
    /// The platform named by `bytes` in any case.
    init?(lowercasing bytes: [UInt8]) {
        var lower = bytes
        DeviceID.lowercaseASCII(&lower)
        self.init(rawValue: String(decoding: lower, as: UTF8.self))
    }
}
