/// Per-event and per-request limits applied while normalising; tests shrink them to reach edges.
package struct IngestLimits: Sendable, Equatable {
    /// Largest event, measured on its raw JSON bytes (default 32 KiB).
    package var maxEventBytes: Int
    /// Most events in one batch (default 2,000).
    package var maxBatchEvents: Int
    /// Longest event name in Unicode scalars (default 128).
    package var maxNameLength: Int
    /// Deepest nesting inside one event, the event object itself being depth 1 (default 32).
    package var maxDepth: Int
    /// Most JSON values in one body, object keys included (default 1,000,000). The scanner keeps
    /// 16 bytes per value, so this bounds a request's parse to 16 MB whatever its density: 10 MiB
    /// of `[0,0,...]` would be 5 million values (80 MB), while SDK JSON has about one value per 12
    /// bytes, so a body at the 10 MiB decompressed limit holds under 900,000.
    package var maxValues: Int

    /// Creates limits; every argument defaults to the documented default.
    package init(
        maxEventBytes: Int = 32 * 1024, maxBatchEvents: Int = 2000, maxNameLength: Int = 128, maxDepth: Int = 32,
        maxValues: Int = 1_000_000
    ) {
        self.maxEventBytes = maxEventBytes
        self.maxBatchEvents = maxBatchEvents
        self.maxNameLength = maxNameLength
        self.maxDepth = maxDepth
        self.maxValues = maxValues
    }
}

/// What ingest knows about a request besides its body.
package struct RequestContext: Sendable {
    /// The authenticated app id.
    package var appID: String
    /// The `X-SDK` header, when sent.
    package var sdkHeader: String?
    /// Server time when the request arrived.
    package var receivedAt: Timestamp

    /// Creates a context.
    package init(appID: String, sdkHeader: String? = nil, receivedAt: Timestamp) {
        self.appID = appID
        self.sdkHeader = sdkHeader
        self.receivedAt = receivedAt
    }
}

/// One refused event: its index in the request and a stable machine code (see `docs/envelope.md`).
package struct EventRejection: Sendable, Equatable {
    /// Position of the event in the request (0 for single-event routes).
    package var index: Int
    /// A stable code such as `missing_field` or `invalid_timestamp`.
    package var code: String
    /// A human-readable explanation, safe to return to the client.
    package var message: String
    /// The event's JSON exactly as received, for the dead-letter log (not for the client): a slice
    /// of the body, so an event over the size limit is not copied (a lone surrogate escape reads
    /// `\ufffd` here, as in the scanned document).
    package var rawEvent: ArraySlice<UInt8>

    /// Creates a rejection.
    package init(index: Int, code: String, message: String, rawEvent: ArraySlice<UInt8> = []) {
        self.index = index
        self.code = code
        self.message = message
        self.rawEvent = rawEvent
    }
}

/// The outcome of normalising one request body.
package struct NormalizedRequest: Sendable {
    /// Accepted events, in request order.
    package var accepted: [Envelope]
    /// Refused events with their reasons, in request order.
    package var rejected: [EventRejection]
    /// Notes for the client about accepted events (clamped times, ignored fields).
    package var warnings: [String]

    /// Creates an outcome.
    package init(accepted: [Envelope] = [], rejected: [EventRejection] = [], warnings: [String] = []) {
        self.accepted = accepted
        self.rejected = rejected
        self.warnings = warnings
    }
}

/// A body-level problem: the whole request is refused.
package enum BodyError: Error, Equatable, CustomStringConvertible {
    /// The body is not JSON; `byteOffset` is where the first error was found.
    case invalidJSON(message: String, byteOffset: Int)
    /// The body is JSON but not an object.
    case notAnObject
    /// The batch holds more events than allowed.
    case tooManyEvents(count: Int, limit: Int)
    /// The batch holds no events.
    case emptyBatch
    /// The body nests deeper than any event could be allowed to.
    case tooDeep(limit: Int)
    /// The body is an object but has no usable event list (`batch`, `clicks`, `matches`).
    case invalidBatch(message: String)
    /// The body holds more JSON values (keys included) than `IngestLimits.maxValues`.
    case tooManyValues(limit: Int)

    /// The stable machine code for the client.
    package var code: String {
        switch self {
        case .invalidJSON: "invalid_json"
        case .notAnObject: "not_an_object"
        case .tooManyEvents: "too_many_events"
        case .emptyBatch: "empty_batch"
        case .tooDeep: "too_deep"
        case .invalidBatch: "invalid_batch"
        case .tooManyValues: "too_many_values"
        }
    }

    /// A message safe to return to the client.
    package var description: String {
        switch self {
        case .invalidJSON(let message, let offset): "\(message) at byte \(offset)"
        case .notAnObject: "the body must be a JSON object"
        case .tooManyEvents(let count, let limit): "the batch has \(count) events, at most \(limit) are allowed"
        case .emptyBatch: "the batch has no events"
        case .tooDeep(let limit): "the body nests deeper than \(limit) levels"
        case .invalidBatch(let message): message
        case .tooManyValues(let limit):
            "the body holds more than \(limit) JSON values (keys included); send its events in smaller batches"
        }
    }
}
