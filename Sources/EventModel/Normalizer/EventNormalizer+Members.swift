#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Reading and checking individual members of the event being normalised.

extension EventNormalizer {
    /// The event must be an object within the size and depth limits.
    func checkShape(_ value: JSONValue) throws(Rejection) {
        guard value.kind == .object else { throw Rejection(.invalidEvent, "the event must be a JSON object") }
        try Self.checkLimits(value, limits)
    }

    /// The event is within the size and depth limits.
    static func checkLimits(_ value: JSONValue, _ limits: IngestLimits) throws(Rejection) {
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
            throw Rejection(
                .invalidTimestamp, "\"timestamp\" must be ISO-8601 with a zone, e.g. 2026-06-01T10:20:30.123Z")
        }
        return Timestamp(microseconds: parsed)
    }

    /// The device id member, checked: 1 to 128 bytes without control characters.
    func deviceID() throws(Rejection) -> JSONValue {
        let isValid = try readString(.deviceID, required: true) { DeviceID.isValidIdentifier($0) }!
        guard isValid else {
            throw Rejection(
                .invalidDeviceID,
                "\"device_id\" must be 1 to \(Self.maxIdentifierBytes) bytes without control characters")
        }
        return fields[.deviceID]!
    }

    /// The client's id: the first of event_id, message_id, messageId, insert_id, uuid present.
    func clientEventID() throws(Rejection) -> String? {
        try clientEventIDValue()?.string
    }

    /// `clientEventID()` as the checked string value in the body (no copy).
    ///
    /// A member that is not a string, or is the empty string, names no event and is passed over
    /// for the next one (else the hash): Amplitude-style clients send an integer `event_id` (a
    /// counter, repeated across devices, which as the dedup key would drop other devices' events)
    /// beside a string `insert_id`, and some clients write an unset id as `""`. Until 2026-12-05
    /// either rejected the whole event (`invalid_type`, `invalid_event_id`).
    func clientEventIDValue() throws(Rejection) -> JSONValue? {
        for field in EventField.idFields {
            guard let value = fields[field] else { continue }
            let read = value.withStringBytes { bytes -> Bool? in
                bytes.isEmpty ? nil : DeviceID.isValidIdentifier(bytes) && !DeviceID.isHashedID(bytes)
            }
            guard let isValid = read ?? nil else { continue }
            guard isValid else {
                throw Rejection(
                    .invalidEventID,
                    "\"\(field.key)\" must be at most \(Self.maxIdentifierBytes) bytes without control characters, not starting with \"h:\""
                )
            }
            return fields[field]
        }
        return nil
    }

    /// `attribution`: an object whose three members are strings or null; absent members are null
    /// (Android drops null members). Unknown members are ignored; the first of a repeated one wins.
    /// The two click ids are at most 128 bytes, as the link service's click ids are: PostgreSQL's
    /// btree indexes on them (`events_app_open_click`, the rollups' install-click keys) cannot hold
    /// a value over about 2.7 KB, and one such event once failed every later load cycle.
    func attribution() throws(Rejection) -> AttributionValues? {
        guard let value = fields[.attribution], !value.isNull else { return nil }
        guard value.kind == .object else { throw Rejection(.invalidType, "\"attribution\" must be an object") }
        var attribution = AttributionValues()
        var seen = (install: false, open: false, type: false)
        for (key, member) in value.members {
            let isInstall = key.stringEquals("install_click_id")
            let isOpen = !isInstall && key.stringEquals("open_click_id")
            let isType = !isInstall && !isOpen && key.stringEquals("open_type")
            let isString = member.kind == .string
            if !isString, !member.isNull, isInstall || isOpen || isType {
                throw Rejection(.invalidType, "\"attribution.\(key.string ?? "")\" must be a string or null")
            }
            let text = isString ? member : nil
            if isInstall || isOpen, let text, text.byteRange.count > Self.maxIdentifierBytes,
                (text.withStringBytes { $0.count } ?? 0) > Self.maxIdentifierBytes
            {
                throw Rejection(
                    .invalidClickID,
                    "\"attribution.\(key.string ?? "")\" must be at most \(Self.maxIdentifierBytes) bytes")
            }
            if isInstall {
                if !seen.install { attribution.installClickID = text }
                seen.install = true
            } else if isOpen {
                if !seen.open { attribution.openClickID = text }
                seen.open = true
            } else if isType {
                if !seen.type { attribution.openType = text }
                seen.type = true
            }
        }
        return attribution
    }
}

extension EventNormalizer {
    /// The `X-SDK` header, else the body's `sdk` string. Either must be 1 to 128 bytes without
    /// control characters; an unusable value is ignored with a warning (it is informational and
    /// not worth losing the event over).
    mutating func sdk(index: Int) -> String? {
        if let header = context.sdkHeader, !header.isEmpty {
            if isSDKHeaderValid { return header }
            // Once per request, with the first accepted event: the header is the request's, and a
            // batch of 2,000 answered 2,000 copies of this line (until 2026-12-05).
            if !hasSDKHeaderWarning {
                hasSDKHeaderWarning = true
                result.warnings.append(
                    "event \(index): the X-SDK header is not 1 to \(Self.maxIdentifierBytes) printable bytes and was ignored"
                        + " (for every event of this request)")
            }
        }
        guard let value = fields[.sdk], !value.isNull else { return nil }
        guard
            let text = value.withStringBytes({
                DeviceID.isValidIdentifier($0) ? String(decoding: $0, as: UTF8.self) : nil
            }) ?? nil
        else {
            result.warnings.append(
                "event \(index): \"sdk\" is not a string of 1 to \(Self.maxIdentifierBytes) printable bytes and was ignored"
            )
            return nil
        }
        return text
    }

    /// Applies the clock rules, warning when a time is clamped.
    mutating func resolveTime(client: Timestamp, index: Int) -> (Timestamp, ClockStatus) {
        let (time, clock) = ClockRule.resolve(client: client, sentAt: sentAt, receivedAt: context.receivedAt)
        if clock == .futureClamped {
            result.warnings.append(
                "event \(index): timestamp is more than 24 hours ahead of the server clock; time set to received_at")
        }
        return (time, clock)
    }

    /// The hashed id (`EventHash.writeEventID`) of the app and the fields `body` appends, which
    /// must include `clientTime`.
    mutating func hashedID(clientTime: Timestamp, _ body: (inout EventHash) -> Void) -> String {
        hash.reset()
        hash.append(context.appID)
        body(&hash)
        return hash.eventID(clientTime: clientTime)
    }

    /// The digest of an SDK event: app, kind, normalised device, name, client time, raw data.
    mutating func digest(of event: SDKEvent) -> (UInt64, UInt64) {
        event.device.withStringBytes { bytes in
            DeviceID.withNormalized(bytes) { digest(of: event, device: $0) }
        }!
    }

    /// `digest(of:)` with the device id already normalised.
    mutating func digest(of event: SDKEvent, device: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64) {
        hash.reset()
        hash.append(context.appID)
        hash.append(event.kind.rawValue)
        hash.append(device)
        event.name.withStringBytes { hash.append($0) }
        hash.append(event.client.microseconds)
        if let data = event.data {
            data.document.bytes.withUnsafeBufferPointer {
                hash.append(UnsafeBufferPointer(rebasing: $0[data.byteRange]))
            }
        } else {
            hash.append(EmptyCollection<UInt8>())
        }
        return hash.words
    }

    /// The hashed id (`EventHash.writeEventID`) of `digest(of:)` and the event's client time.
    mutating func hashedID(of event: SDKEvent) -> String {
        EventHash.eventID(digest(of: event), clientTime: event.client)
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

    /// Calls `body` with the normalised bytes of a valid device id (lowercased when UUID-shaped).
    static func withNormalized<R>(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        guard uuidShape(bytes) == .upperCase else { return body(bytes) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { scratch in
            for k in 0..<36 {
                let b = bytes[k]
                scratch[k] = b &- 65 < 26 ? b | 0x20 : b
            }
            return body(UnsafeBufferPointer(scratch))
        }
    }

    /// The normalised device id, or nil when it is not a valid identifier.
    static func normalize(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard isValidIdentifier(bytes) else { return nil }
        return withNormalized(bytes) { String(decoding: $0, as: UTF8.self) }
    }

    /// True for `8-4-4-4-12` hex digits in any case.
    static func isUUIDShaped(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        uuidShape(bytes) != .other
    }

    /// Whether `bytes` is a UUID, and whether it has upper-case hex digits (to lowercase).
    enum UUIDShape { case other, lowerCase, upperCase }

    /// `isUUIDShaped` and the upper-case test in one pass over the 36 bytes, without branches per
    /// byte (digits and letters alternate at random in a UUID, so branches would mispredict).
    static func uuidShape(_ bytes: UnsafeBufferPointer<UInt8>) -> UUIDShape {
        guard bytes.count == 36, let p = bytes.baseAddress else { return .other }
        let dash = UInt8(ascii: "-")
        guard p[8] == dash, p[13] == dash, p[18] == dash, p[23] == dash else { return .other }
        var isHex: UInt8 = 1
        var upper: UInt8 = 0
        @inline(__always) func scan(_ range: Range<Int>) {
            for k in range {
                let b = p[k]
                // Digits, or a-f / A-F (`| 0x20` maps A-F to a-f and leaves digits alone).
                let digit: UInt8 = b &- 48 < 10 ? 1 : 0
                let letter: UInt8 = (b | 0x20) &- 97 < 6 ? 1 : 0
                isHex &= digit | letter
                upper |= b &- 65 < 6 ? 1 : 0
            }
        }
        scan(0..<8)
        scan(9..<13)
        scan(14..<18)
        scan(19..<23)
        scan(24..<36)
        guard isHex == 1 else { return .other }
        return upper == 1 ? .upperCase : .lowerCase
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

extension EventKind {
    /// The kind a batch element's `"type"` names: exactly `event` or `retention`.
    init?(sdkType bytes: UnsafeBufferPointer<UInt8>) {
        func equals(_ name: StaticString) -> Bool {
            bytes.count == name.utf8CodeUnitCount && memcmp(bytes.baseAddress!, name.utf8Start, bytes.count) == 0
        }
        if equals("event") {
            self = .event
        } else if equals("retention") {
            self = .retention
        } else {
            return nil
        }
    }
}
