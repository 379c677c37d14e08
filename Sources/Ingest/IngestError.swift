/// Why a request was refused as a whole. Each case maps to one HTTP status and one stable code in
/// `IngestError.answer` — the only place that mapping exists. Messages are safe to send to clients:
/// they never contain API keys.
package enum IngestError: Error, Sendable, Equatable {
    /// No route has this path.
    case notFound(path: String)
    /// The route exists but not for this method; `allow` lists the methods it takes.
    case methodNotAllowed(method: String, allow: String)
    /// No `Authorization: Bearer` header.
    case missingKey
    /// No `X-App-ID` header on a route that needs one.
    case missingAppID
    /// The key is not known (or revoked).
    case invalidKey
    /// No key set was ever loaded (PostgreSQL has not answered since start and there is no key
    /// cache), so no key can be judged; retry later.
    case keysUnavailable
    /// The key is valid but may not be used for this app or on this route.
    case keyNotAllowed(reason: String)
    /// The body on the wire is larger than `limit` bytes.
    case bodyTooLarge(limit: Int)
    /// The body inflates past `limit` bytes.
    case decompressedTooLarge(limit: Int)
    /// `Content-Encoding` is not gzip, zstd or identity.
    case unsupportedEncoding(String)
    /// `Content-Type` is not JSON.
    case unsupportedMediaType(String)
    /// The body claims gzip or zstd but does not decode.
    case invalidEncoding(encoding: String, reason: String)
    /// The request's body framing is ambiguous: `Transfer-Encoding` with `Content-Length`, or a
    /// transfer coding other than `chunked` alone (RFC 9112 6.1, 6.3).
    case invalidFraming(reason: String)
    /// The body is not JSON; `byteOffset` is where parsing stopped (in the decoded body).
    case invalidJSON(message: String, byteOffset: Int)
    /// The body is JSON but not in a shape this route takes (not an object, no batch array, ...).
    case invalidBody(code: String, message: String)
    /// A batch holds more events than allowed.
    case tooManyEvents(count: Int, limit: Int)
    /// The body holds more JSON values than `IngestConfiguration.maxValues`.
    case tooManyValues(limit: Int)
    /// The app exceeded its configured request rate; retry after `retryAfter` seconds.
    case rateLimited(retryAfter: Int)
    /// The event log could not make the events durable.
    case logUnavailable(reason: String)
    /// The server is shutting down and takes no new events.
    case shuttingDown
    /// The server holds as many request bytes (bodies, and events on their way to disk) as
    /// `maxBufferedBodyBytes` allows; retry shortly.
    case overloaded
    /// A report query parameter is malformed, repeated, too long, or one too many.
    case invalidParameter(name: String, message: String)
    /// The server was started without a report provider (no database for reports).
    case reportsUnavailable
    /// Every report worker is busy and the report queue is full; retry after `retryAfter` seconds.
    case reportsBusy(retryAfter: Int)
    /// A report-level refusal from the report provider (`unknown_app`, `rollups_pending`,
    /// `database_unavailable`, ...), passed through with its own status and stable code; a 503
    /// carries `Retry-After: 5`.
    case report(status: Int, code: String, message: String)

    /// The HTTP status, stable machine code and human message for this error, plus extra headers.
    package var answer: (status: Int, code: String, message: String, headers: [(String, String)]) {
        switch self {
        case .notFound(let path):
            (404, "not_found", "no route for \(path)", [])
        case .methodNotAllowed(let method, let allow):
            (405, "method_not_allowed", "\(method) is not allowed here; use \(allow)", [("Allow", allow)])
        case .missingKey:
            (401, "missing_key", "send the app's key as Authorization: Bearer <key>", [])
        case .missingAppID:
            (401, "missing_app_id", "send the app's id in the X-App-ID header", [])
        case .invalidKey:
            (401, "invalid_key", "the API key is not valid", [])
        case .keysUnavailable:
            (
                503, "keys_unavailable",
                "API keys are not loaded yet (the key database has not answered since start); retry later",
                [("Retry-After", "5")]
            )
        case .keyNotAllowed(let reason):
            (403, "key_not_allowed", reason, [])
        case .bodyTooLarge(let limit):
            (413, "body_too_large", "request body exceeds \(limit) bytes", [])
        case .decompressedTooLarge(let limit):
            (413, "decompressed_too_large", "decompressed request body exceeds \(limit) bytes", [])
        case .unsupportedEncoding(let encoding):
            // RFC 9110 15.5.16: a 415 for a content coding names the codings taken.
            (
                415, "unsupported_encoding",
                "Content-Encoding \(encoding) is not supported; use gzip, zstd or identity",
                [("Accept-Encoding", "gzip, zstd")]
            )
        case .unsupportedMediaType(let type):
            (415, "unsupported_media_type", "Content-Type \(type) is not supported; send application/json", [])
        case .invalidEncoding(let encoding, let reason):
            (400, "invalid_encoding", "body is not valid \(encoding): \(reason)", [])
        case .invalidJSON(let message, let byteOffset):
            (400, "invalid_json", "\(message) at byte \(byteOffset)", [])
        case .invalidBody(let code, let message):
            (400, code, message, [])
        case .tooManyEvents(let count, let limit):
            (400, "too_many_events", "batch has \(count) events; the limit is \(limit)", [])
        case .tooManyValues(let limit):
            (
                413, "too_many_values",
                "the body holds more than \(limit) JSON values (keys included); send its events in smaller batches", []
            )
        case .rateLimited(let retryAfter):
            (429, "rate_limited", "too many requests for this app", [("Retry-After", String(retryAfter))])
        case .logUnavailable:
            (503, "log_unavailable", "events could not be stored durably; retry later", [("Retry-After", "1")])
        case .shuttingDown:
            (503, "shutting_down", "the server is shutting down; retry later", [("Retry-After", "1")])
        case .overloaded:
            (503, "overloaded", "the server holds too many requests at once; retry later", [("Retry-After", "1")])
        case .invalidFraming(let reason):
            (400, "invalid_framing", reason, [])
        case .invalidParameter(let name, let message):
            (400, "invalid_parameter", "invalid parameter \(name): \(message)", [])
        case .reportsUnavailable:
            (503, "reports_unavailable", "this server does not serve reports (no report database configured)", [])
        case .reportsBusy(let retryAfter):
            (503, "reports_busy", "every report worker is busy; retry later", [("Retry-After", String(retryAfter))])
        case .report(let status, let code, let message):
            (status, code, message, status == 503 ? [("Retry-After", "5")] : [])
        }
    }
}
