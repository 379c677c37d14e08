// Per-event normalisation shared by the three entry points. Each event is checked in a fixed
// order (shape, size, depth, duplicate keys, then member by member) and the first problem is
// its rejection; see docs/envelope.md for the codes.

/// Normalises the events of one request and collects the outcome.
struct EventNormalizer {
    let context: RequestContext
    let limits: IngestLimits
    var sentAt: Timestamp?
    var result = NormalizedRequest()
    var fields = EventFields()
    var hash = EventHash()

    /// Longest accepted device id, event id, click id or SDK string, in bytes.
    static let maxIdentifierBytes = 128

    init(context: RequestContext, limits: IngestLimits, sentAt: Timestamp?) {
        self.context = context
        self.limits = limits
        self.sentAt = sentAt
    }

    /// Reads `sent_at` (or Segment's `sentAt`); an unreadable one is ignored with a warning.
    mutating func readSentAt(_ root: JSONValue) -> Timestamp? {
        guard let value = root["sent_at"] ?? root["sentAt"], !value.isNull else { return nil }
        if let bytes = value.stringBytes, let time = Timestamp(iso8601: bytes) { return time }
        result.warnings.append("sent_at is not an ISO-8601 timestamp and was ignored; no clock correction applied")
        return nil
    }

    // MARK: SDK events

    /// Normalises one SDK event; `kind` nil means "read `type`, default event".
    mutating func sdkEvent(_ value: JSONValue, index: Int, kind: EventKind?, allowsType: Bool) {
        do throws(Rejection) {
            let envelope = try makeSDKEnvelope(value, index: index, kind: kind, allowsType: allowsType)
            result.accepted.append(envelope)
        } catch {
            result.rejected.append(EventRejection(index: index, code: error.code.rawValue, message: error.message))
        }
    }

    private mutating func makeSDKEnvelope(
        _ value: JSONValue, index: Int, kind fixedKind: EventKind?, allowsType: Bool
    ) throws(Rejection) -> Envelope {
        try checkShape(value)
        try fields.collect(from: value, mask: EventField.sdkMask(allowsType: allowsType))
        var kind = fixedKind ?? .event
        if allowsType, let type = try optionalString(.type) {
            switch type {
            case "event": kind = .event
            case "retention": kind = .retention
            default: throw Rejection(.invalidKind, "\"type\" must be \"event\" or \"retention\"")
            }
        }
        let nameBytes = try requiredStringBytes(.eventName)
        guard !nameBytes.isEmpty else { throw Rejection(.invalidName, "\"event_name\" must not be empty") }
        let nameLength = nameBytes.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
        guard nameLength <= limits.maxNameLength else {
            throw Rejection(.nameTooLong, "\"event_name\" has \(nameLength) characters, at most \(limits.maxNameLength) are allowed")
        }
        let client = try requiredTimestamp()
        let platformText = try requiredStringBytes(.platform)
        guard let platform = Platform(lowercasing: platformText), platform == .ios || platform == .android else {
            throw Rejection(.invalidPlatform, "\"platform\" must be \"ios\" or \"android\"")
        }
        let device = try deviceID()
        let clientID = try clientEventID()
        let (time, clock) = resolveTime(client: client, index: index)

        let name = String(decoding: nameBytes, as: UTF8.self)
        let data = try rawJSON(.data)
        let id = clientID ?? hashedID { hash in
            hash.append(kind.rawValue)
            hash.append(device)
            hash.append(name)
            hash.append(client.microseconds)
            hash.append(data ?? [])
        }
        var envelope = Envelope(id: id, app: context.appID, kind: kind, time: time, receivedAt: context.receivedAt, clock: clock)
        envelope.name = name
        envelope.device = device
        envelope.platform = platform
        envelope.sdk = sdk(index: index)
        envelope.clientTimestamp = client
        envelope.sentAt = sentAt
        envelope.attribution = try attribution()
        envelope.clickID = try optionalString(.clickID).flatMap { $0.isEmpty ? nil : $0 }
        envelope.data = data
        envelope.metadata = try rawJSON(.metadata)
        return envelope
    }

    // MARK: Link events

    /// Normalises one click or match; `kind` nil means "read `type`".
    mutating func linkEvent(_ value: JSONValue, index: Int, kind: EventKind?) {
        do throws(Rejection) {
            let envelope = try makeLinkEnvelope(value, index: index, kind: kind)
            result.accepted.append(envelope)
        } catch {
            result.rejected.append(EventRejection(index: index, code: error.code.rawValue, message: error.message))
        }
    }

    private mutating func makeLinkEnvelope(_ value: JSONValue, index: Int, kind fixedKind: EventKind?) throws(Rejection) -> Envelope {
        try checkShape(value)
        try fields.collect(from: value, mask: EventField.linkMask)
        let kind: EventKind
        if let fixedKind {
            kind = fixedKind
        } else {
            guard let type = try optionalString(.type) else { throw Rejection(.missingField, "\"type\" is required") }
            switch type {
            case "click": kind = .click
            case "match": kind = .match
            default: throw Rejection(.invalidKind, "\"type\" must be \"click\" or \"match\"")
            }
        }
        let clickIDBytes = try requiredStringBytes(.clickID)
        guard !clickIDBytes.isEmpty, clickIDBytes.count <= Self.maxIdentifierBytes,
            !clickIDBytes.contains(where: { $0 < 0x20 || $0 == 0x7F })
        else {
            throw Rejection(.invalidClickID, "\"click_id\" must be 1 to \(Self.maxIdentifierBytes) bytes without control characters")
        }
        let clickID = String(decoding: clickIDBytes, as: UTF8.self)
        let client = try requiredTimestamp()
        let clientID = try clientEventID()
        let (time, clock) = resolveTime(client: client, index: index)
        var envelope = Envelope(id: "", app: context.appID, kind: kind, time: time, receivedAt: context.receivedAt, clock: clock)
        envelope.clickID = clickID
        envelope.clientTimestamp = client
        envelope.sentAt = sentAt
        if kind == .click {
            let urlBytes = try requiredStringBytes(.url)
            guard let link = LinkURL(urlBytes) else { throw Rejection(.invalidURL, "\"url\" must be an absolute URL") }
            envelope.url = String(decoding: urlBytes, as: UTF8.self)
            envelope.path = link.path
            envelope.query = link.query
            if let platformText = try optionalStringBytes(.platform) {
                guard let platform = Platform(lowercasing: platformText) else {
                    throw Rejection(.invalidPlatform, "\"platform\" must be \"ios\", \"android\", \"desktop\" or \"unknown\"")
                }
                envelope.platform = platform
            } else {
                envelope.platform = .unknown
            }
            let kindText = try requiredStringBytes(.kind, name: "kind")
            guard let clickKind = ClickKind(rawValue: String(decoding: kindText, as: UTF8.self)) else {
                throw Rejection(.invalidClickKind, "\"kind\" must be \"web\" or \"universal_link\"")
            }
            envelope.clickKind = clickKind
            envelope.userAgent = try optionalString(.userAgent)
            envelope.ip = try optionalString(.ip)
            envelope.referrer = try optionalString(.referrer)
        } else {
            let methodText = try requiredStringBytes(.method)
            guard let method = MatchMethod(rawValue: String(decoding: methodText, as: UTF8.self)) else {
                throw Rejection(.invalidMethod, "\"method\" must be \"deterministic\" or \"probabilistic\"")
            }
            envelope.method = method
            if let score = fields[.score], !score.isNull {
                guard let number = score.double else {
                    throw Rejection(.invalidType, "\"score\" must be a number")
                }
                envelope.score = number
            }
        }
        envelope.id = clientID ?? hashedID { hash in
            hash.append(kind.rawValue)
            hash.append(clickID)
            hash.append(envelope.method?.rawValue ?? "")
            hash.append(client.microseconds)
            hash.append(envelope.url ?? "")
        }
        return envelope
    }
}
