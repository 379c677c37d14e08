// Per-event normalisation shared by the three entry points. Each event is checked in a fixed
// order (shape, size, depth, duplicate keys, then member by member) and the first problem is
// its rejection; see docs/envelope.md for the codes.

/// Normalises the events of one request and collects the outcome.
struct EventNormalizer {
    let context: RequestContext
    let limits: IngestLimits
    var sentAt: Timestamp?
    var result = NormalizedRequest()
    /// Envelope lines of accepted events, when normalising straight to lines (a batch sizes it
    /// up front; otherwise the first accepted event makes it).
    var lines: LineBuffer?
    var fields = EventFields()
    var hash = EventHash()

    /// Longest accepted device id, event id, click id or SDK string, in bytes.
    static let maxIdentifierBytes = 128
    /// The longest link path (the click URL after the app hash) a click may have, in bytes.
    static let maxLinkPathBytes = 1024

    /// `received_at` as a quoted JSON timestamp: the same for every line of the request.
    let receivedAtJSON: JSONWriter.TimestampText
    /// Whether the `X-SDK` header is a usable identifier (checked once per request).
    let isSDKHeaderValid: Bool
    /// Whether the answer already says that the `X-SDK` header was ignored (once per request).
    var hasSDKHeaderWarning = false
    /// `sentAt` as a quoted JSON timestamp, formatted once per request.
    var sentAtJSON: (time: Timestamp, text: JSONWriter.TimestampText)?

    /// A normaliser for the events of `document`.
    init(_ document: JSONDocument, context: RequestContext, limits: IngestLimits) {
        self.context = context
        self.limits = limits
        receivedAtJSON = JSONWriter.TimestampText(context.receivedAt)
        var header = context.sdkHeader ?? ""
        isSDKHeaderValid = header.withUTF8 { DeviceID.isValidIdentifier($0) }
        if document.hasLoneSurrogates { result.warnings.append(Self.loneSurrogateWarning) }
    }

    /// The warning for a body whose strings held a lone surrogate escape (read as U+FFFD).
    static let loneSurrogateWarning =
        "a string held a lone UTF-16 surrogate escape (\\uD800-\\uDFFF without its other half); it was read as U+FFFD"

    /// Reads `sent_at` (or Segment's `sentAt`; a `null` counts as absent); an unreadable one is
    /// ignored with a warning.
    mutating func readSentAt(_ root: JSONValue) -> Timestamp? {
        let present = { (key: String) in root[key].flatMap { $0.isNull ? nil : (key, $0) } }
        guard let (key, value) = present("sent_at") ?? present("sentAt") else { return nil }
        if let bytes = value.stringBytes, let time = Timestamp(iso8601: bytes) { return time }
        // Named as the client spelled it: a Segment client sends `sentAt`.
        result.warnings.append("\(key) is not an ISO-8601 timestamp and was ignored; no clock correction applied")
        return nil
    }

    /// A batch element's own `sent_at` (or `sentAt`; null counts as absent): its send time when
    /// its client stamps each message (Segment, RudderStack). An unreadable one is ignored with a
    /// warning, and the request's `sent_at`, if any, applies instead.
    mutating func elementSentAt(index: Int) -> Timestamp? {
        let fields = fields
        let present = { (field: EventField) in fields[field].flatMap { $0.isNull ? nil : (field, $0) } }
        guard let (field, value) = present(.sentAt) ?? present(.sentAtCamel) else { return nil }
        if let bytes = value.stringBytes, let time = Timestamp(iso8601: bytes) { return time }
        let fallback = sentAt == nil ? "no clock correction applied" : "the batch's sent_at applies"
        result.warnings.append(
            "event \(index): \(field.key) is not an ISO-8601 timestamp and was ignored; \(fallback)")
        return nil
    }

    // MARK: SDK events

    /// Normalises one SDK event; `kind` nil means "read `type`, default event". With `encode`,
    /// the accepted event is written straight to `lines` as an envelope line instead of being
    /// kept as an `Envelope`.
    mutating func sdkEvent(_ value: JSONValue, index: Int, kind: EventKind?, allowsType: Bool, encode: Bool = false) {
        do throws(Rejection) {
            let event = try validateSDKEvent(value, index: index, kind: kind, allowsType: allowsType)
            // A batch element's own `sent_at` applies to it alone (read only once the event is
            // accepted: warnings concern accepted events).
            let requestSentAt = sentAt
            defer { sentAt = requestSentAt }
            if allowsType, fields.found & EventField.sentAtMask != 0 {
                sentAt = elementSentAt(index: index) ?? requestSentAt
            }
            if encode {
                appendRecord(of: event, index: index)
            } else {
                result.accepted.append(envelope(of: event, index: index))
            }
        } catch {
            result.rejected.append(
                EventRejection(
                    index: index, code: error.code.rawValue, message: error.message, rawEvent: value.rawBytes))
        }
    }

    /// The outcome of normalising straight to lines.
    var encodedRequest: EncodedRequest {
        EncodedRequest(lines: lines ?? LineBuffer(capacity: 0), rejected: result.rejected, warnings: result.warnings)
    }

    /// Checks one SDK event; the result still points into the body.
    private mutating func validateSDKEvent(
        _ value: JSONValue, index: Int, kind fixedKind: EventKind?, allowsType: Bool
    ) throws(Rejection) -> SDKEvent {
        try checkShape(value)
        try fields.collect(from: value, mask: allowsType ? EventField.sdkBatchMask : EventField.sdkMask)
        var kind = fixedKind ?? .event
        if allowsType, let type = try readString(.type, { EventKind(sdkType: $0) }) {
            guard let type else { throw Rejection(.invalidKind, "\"type\" must be \"event\" or \"retention\"") }
            kind = type
        }
        let nameLength = try readString(.eventName, required: true) { bytes in
            bytes.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
        }!
        guard nameLength > 0 else { throw Rejection(.invalidName, "\"event_name\" must not be empty") }
        guard nameLength <= limits.maxNameLength else {
            throw Rejection(
                .nameTooLong, "\"event_name\" has \(nameLength) characters, at most \(limits.maxNameLength) are allowed"
            )
        }
        let client = try requiredTimestamp()
        let platform = try readString(.platform, required: true) { Platform(caseInsensitive: $0) }!
        guard let platform, platform == .ios || platform == .android else {
            throw Rejection(.invalidPlatform, "\"platform\" must be \"ios\" or \"android\"")
        }
        let device = try deviceID()
        return SDKEvent(
            kind: kind, name: fields[.eventName]!, client: client, platform: platform, device: device,
            clientID: try clientEventIDValue(), attribution: try attribution(),
            clickID: try readString(.clickID) { !$0.isEmpty }.flatMap { $0 ? fields[.clickID] : nil },
            data: fields[.data].flatMap { $0.isNull ? nil : $0 },
            metadata: fields[.metadata].flatMap { $0.isNull ? nil : $0 },
            mergedMetadata: fields.found & EventField.metadataMask == 0 ? nil : mergedMetadata(index: index))
    }

    /// The envelope of a validated event. Every check has passed, so from here on nothing
    /// rejects and warnings only concern accepted events.
    private mutating func envelope(of event: SDKEvent, index: Int) -> Envelope {
        let (time, clock) = resolveTime(client: event.client, index: index)
        let id = event.clientID?.string ?? hashedID(of: event)
        var envelope = Envelope(
            id: id, app: context.appID, kind: event.kind, time: time, receivedAt: context.receivedAt, clock: clock)
        envelope.name = event.name.string
        envelope.device = event.device.withStringBytes { DeviceID.normalize($0) } ?? nil
        envelope.platform = event.platform
        envelope.sdk = sdk(index: index)
        envelope.clientTimestamp = event.client
        envelope.sentAt = sentAt
        envelope.attribution = event.attribution?.strings
        envelope.clickID = event.clickID?.string
        envelope.data = event.data.map { Array($0.rawBytes) }
        envelope.metadata = event.mergedMetadata ?? event.metadata.map { Array($0.rawBytes) }
        return envelope
    }

    // MARK: Link events

    /// Normalises one click or match; `kind` nil means "read `type`".
    mutating func linkEvent(_ value: JSONValue, index: Int, kind: EventKind?) {
        do throws(Rejection) {
            let envelope = try makeLinkEnvelope(value, index: index, kind: kind)
            result.accepted.append(envelope)
        } catch {
            result.rejected.append(
                EventRejection(
                    index: index, code: error.code.rawValue, message: error.message, rawEvent: value.rawBytes))
        }
    }

    private mutating func makeLinkEnvelope(_ value: JSONValue, index: Int, kind fixedKind: EventKind?) throws(Rejection)
        -> Envelope
    {
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
        let clickID = try readString(.clickID, required: true) { bytes in
            DeviceID.isValidIdentifier(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
        }!
        guard let clickID else {
            throw Rejection(
                .invalidClickID, "\"click_id\" must be 1 to \(Self.maxIdentifierBytes) bytes without control characters"
            )
        }
        let client = try requiredTimestamp()
        let clientID = try clientEventID()
        var envelope = Envelope(id: "", app: context.appID, kind: kind, time: client, receivedAt: context.receivedAt)
        envelope.clickID = clickID
        envelope.clientTimestamp = client
        envelope.sentAt = sentAt
        if kind == .click {
            try readClick(into: &envelope)
        } else {
            try readMatch(into: &envelope)
        }
        // Every check has passed: from here on nothing rejects, so warnings only concern accepted events.
        (envelope.time, envelope.clock) = resolveTime(client: client, index: index)
        envelope.id =
            clientID
            ?? hashedID(clientTime: client) { hash in
                hash.append(kind.rawValue)
                hash.append(clickID)
                hash.append(envelope.method?.rawValue ?? "")
                hash.append(client.microseconds)
                hash.append(envelope.url ?? "")
            }
        return envelope
    }

    /// url (with path and query), platform (default `unknown`), kind, user_agent, ip, referrer.
    private func readClick(into envelope: inout Envelope) throws(Rejection) {
        let url = try requiredString(.url)
        guard let link = LinkURL(url.utf8) else { throw Rejection(.invalidURL, "\"url\" must be an absolute URL") }
        // The path is a key of `links` and of the link rollups: PostgreSQL's btree indexes cannot
        // hold a value over about 2.7 KB, and one such click once failed every later load cycle.
        guard link.path.utf8.count <= Self.maxLinkPathBytes else {
            throw Rejection(
                .pathTooLong,
                "the link path of \"url\" has \(link.path.utf8.count) bytes, at most \(Self.maxLinkPathBytes) are allowed"
            )
        }
        envelope.url = url
        envelope.path = link.path
        envelope.query = link.query
        if let platform = try readString(.platform, { Platform(caseInsensitive: $0) }) {
            guard let platform else {
                throw Rejection(
                    .invalidPlatform, "\"platform\" must be \"ios\", \"android\", \"desktop\" or \"unknown\"")
            }
            envelope.platform = platform
        } else {
            envelope.platform = .unknown
        }
        guard let clickKind = ClickKind(rawValue: try requiredString(.kind)) else {
            throw Rejection(.invalidClickKind, "\"kind\" must be \"web\" or \"universal_link\"")
        }
        envelope.clickKind = clickKind
        envelope.userAgent = try optionalString(.userAgent)
        envelope.ip = try optionalString(.ip)
        envelope.referrer = try optionalString(.referrer)
    }

    /// method and the optional score.
    private func readMatch(into envelope: inout Envelope) throws(Rejection) {
        guard let method = MatchMethod(rawValue: try requiredString(.method)) else {
            throw Rejection(.invalidMethod, "\"method\" must be \"deterministic\" or \"probabilistic\"")
        }
        envelope.method = method
        if let score = fields[.score], !score.isNull {
            guard let number = score.double else { throw Rejection(.invalidType, "\"score\" must be a number") }
            envelope.score = number
        }
    }
}
