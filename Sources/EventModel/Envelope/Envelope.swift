/// One normalised event as stored in the event log: one NDJSON line per envelope.
///
/// The layout (keys, order, optional members) is documented in `docs/envelope.md`. Fields that do
/// not apply to the envelope's `kind` are nil. `data` and `metadata` hold the client's JSON bytes
/// exactly as received.
package struct Envelope: Sendable, Equatable {
    /// The envelope format version written as `"v"`.
    package static let version = 1

    /// The client's event id, else `"h:"` + 12 hex digits of the client time in milliseconds + 20 hex
    /// digits of a deterministic hash (`EventHash.writeEventID`).
    package var id: String
    /// The app the event belongs to.
    package var app: String
    /// What the envelope records.
    package var kind: EventKind
    /// The corrected event time (see the clock rules).
    package var time: Timestamp
    /// Server time when the request arrived.
    package var receivedAt: Timestamp
    /// How `time` was derived.
    package var clock: ClockStatus

    // MARK: event | retention
    /// The event name (event and retention only).
    package var name: String?
    /// The device id, lowercased when UUID-shaped (event and retention only).
    package var device: String?
    /// The platform (every kind but match).
    package var platform: Platform?
    /// The SDK: the `X-SDK` header, else the body's `sdk` field.
    package var sdk: String?
    /// The client's timestamp as sent (every kind).
    package var clientTimestamp: Timestamp?
    /// The batch's `sent_at`, when there was one.
    package var sentAt: Timestamp?
    /// Link attribution, when sent.
    package var attribution: Attribution?
    /// The click id (optional on events; required on clicks and matches).
    package var clickID: String?
    /// The raw `data` JSON, byte for byte.
    package var data: [UInt8]?
    /// The raw `metadata` JSON, byte for byte.
    package var metadata: [UInt8]?

    // MARK: click
    /// The full link (clicks).
    package var url: String?
    /// The link path after the app hash, `/` when there is none (clicks).
    package var path: String?
    /// Decoded query parameters in URL order, first occurrence of a name wins (clicks).
    package var query: [QueryParameter]?
    /// Browser click or universal-link open (clicks).
    package var clickKind: ClickKind?
    /// The clicking browser's user agent (clicks, optional).
    package var userAgent: String?
    /// The clicking client's IP address (clicks, optional).
    package var ip: String?
    /// The referrer (clicks, optional).
    package var referrer: String?

    // MARK: match
    /// How the install was matched (matches).
    package var method: MatchMethod?
    /// The probabilistic score (matches, optional).
    package var score: Double?

    /// Creates an envelope with the members every kind has; set the kind's members afterwards.
    package init(
        id: String, app: String, kind: EventKind, time: Timestamp, receivedAt: Timestamp,
        clock: ClockStatus = .ok
    ) {
        self.id = id
        self.app = app
        self.kind = kind
        self.time = time
        self.receivedAt = receivedAt
        self.clock = clock
    }
}

/// Why an envelope line could not be decoded.
package enum EnvelopeError: Error, Equatable, CustomStringConvertible {
    /// The line is not valid JSON.
    case invalidJSON(message: String, byteOffset: Int)
    /// The line is JSON but not an object.
    case notAnObject
    /// A required member is absent.
    case missingField(String)
    /// A member has the wrong type or an unknown value.
    case invalidField(String)
    /// The line was written by an unknown format version.
    case unsupportedVersion(Int)

    /// A message safe to log.
    package var description: String {
        switch self {
        case .invalidJSON(let message, let offset): "envelope is not JSON: \(message) at byte \(offset)"
        case .notAnObject: "envelope is not a JSON object"
        case .missingField(let name): "envelope has no \"\(name)\""
        case .invalidField(let name): "envelope member \"\(name)\" is invalid"
        case .unsupportedVersion(let v): "envelope version \(v) is not supported"
        }
    }
}
