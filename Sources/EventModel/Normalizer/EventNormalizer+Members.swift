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

    /// Reads a string member through `body` without copying it; nil when absent or `null`.
    ///
    /// - Throws: `missing_field` when `required` and absent or `null`; `invalid_type` when not a string.
    func readString<R>(
        _ field: EventField, required: Bool = false, _ body: (UnsafeBufferPointer<UInt8>) -> R
    ) throws(Rejection) -> R? {
        guard let value = fields[field], !value.isNull else {
            if required { throw Rejection(.missingField, "\"\(field.key)\" is required") }
            return nil
        }
        guard let result = value.withStringBytes(body) else {
            throw Rejection(.invalidType, "\"\(field.key)\" must be a string")
        }
        return result
    }

    func optionalString(_ field: EventField) throws(Rejection) -> String? {
        try readString(field) { String(decoding: $0, as: UTF8.self) }
    }

    func requiredString(_ field: EventField) throws(Rejection) -> String {
        try readString(field, required: true) { String(decoding: $0, as: UTF8.self) }!
    }

    func requiredTimestamp() throws(Rejection) -> Timestamp {
        let parsed = try readString(.timestamp, required: true) { Timestamp.parse($0) }!
        guard let parsed else {
            throw Rejection(.invalidTimestamp, "\"timestamp\" must be ISO-8601 with a zone, e.g. 2026-06-01T10:20:30.123Z")
        }
        return Timestamp(microseconds: parsed)
    }

    /// The device id: 1 to 128 bytes without control characters, lowercased when UUID-shaped.
    func deviceID() throws(Rejection) -> String {
        let normalized = try readString(.deviceID, required: true) { DeviceID.normalize($0) }!
        guard let normalized else {
            throw Rejection(.invalidDeviceID, "\"device_id\" must be 1 to \(Self.maxIdentifierBytes) bytes without control characters")
        }
        return normalized
    }

    /// The client's id: the first of event_id, message_id, messageId, insert_id, uuid present.
    func clientEventID() throws(Rejection) -> String? {
        for field in EventField.idFields {
            guard let id = try readString(field, { DeviceID.isValidIdentifier($0) && !DeviceID.isHashedID($0) ? String(decoding: $0, as: UTF8.self) : nil }) else { continue }
            guard let id else {
                throw Rejection(
                    .invalidEventID,
                    "\"\(field.key)\" must be 1 to \(Self.maxIdentifierBytes) bytes without control characters, not starting with \"h:\"")
            }
            return id
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

/// Device id normalisation and identifier checks.
enum DeviceID {
    /// 1 to 128 bytes without control characters.
    static func isValidIdentifier(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !bytes.isEmpty, bytes.count <= EventNormalizer.maxIdentifierBytes else { return false }
        for b in bytes where b < 0x20 || b == 0x7F { return false }
        return true
    }

    /// True for ids starting with `h:`, the prefix reserved for hashed ids.
    static func isHashedID(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count >= 2 && bytes[0] == UInt8(ascii: "h") && bytes[1] == UInt8(ascii: ":")
    }

    /// The normalised device id, or nil when it is not a valid identifier.
    static func normalize(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard isValidIdentifier(bytes) else { return nil }
        guard isUUIDShaped(bytes), bytes.contains(where: { $0 &- 65 < 26 }) else {
            return String(decoding: bytes, as: UTF8.self)
        }
        return String(unsafeUninitializedCapacity: bytes.count) { out in
            for k in 0..<bytes.count {
                let b = bytes[k]
                out[k] = b &- 65 < 26 ? b | 0x20 : b
            }
            return bytes.count
        }
    }

    /// True for `8-4-4-4-12` hex digits in any case.
    static func isUUIDShaped(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count == 36 else { return false }
        for k in 0..<36 {
            let b = bytes[k]
            if k == 8 || k == 13 || k == 18 || k == 23 {
                guard b == UInt8(ascii: "-") else { return false }
            } else {
                guard hexValue(b) != nil else { return false }
            }
        }
        return true
    }
}

extension Platform {
    /// The platform named by `bytes` in any ASCII case.
    init?(caseInsensitive bytes: UnsafeBufferPointer<UInt8>) {
        func equals(_ name: StaticString) -> Bool {
            guard bytes.count == name.utf8CodeUnitCount else { return false }
            for k in 0..<bytes.count where bytes[k] | 0x20 != name.utf8Start[k] { return false }
            return true
        }
        if equals("ios") {
            self = .ios
        } else if equals("android") {
            self = .android
        } else if equals("desktop") {
            self = .desktop
        } else if equals("unknown") {
            self = .unknown
        } else {
            return nil
        }
    }
}
