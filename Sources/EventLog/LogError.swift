import Glibc

/// Everything that can go wrong in the event log.
package enum LogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The log cannot take writes right now (queue full, closed, failed write); HTTP 503 with Retry-After.
    case unavailable(reason: String)
    /// The disk is full or the configured disk cap (`maxDiskBytes`) is reached; HTTP 503.
    case diskFull
    /// A system call failed.
    case io(call: String, errno: Int32, path: String)
    /// A frame or file is damaged at `offset` of `path`.
    case corrupt(path: String, offset: Int64, reason: String)
    /// One append is larger than a frame may be.
    case tooLarge(bytes: Int, limit: Int)
    /// A record cannot be stored (for example it contains a newline).
    case invalidRecord(reason: String)
    /// The configuration is unusable.
    case invalidConfiguration(String)

    /// A message safe to log or to return to a client (no record contents).
    package var description: String {
        switch self {
        case .unavailable(let reason): return "event log unavailable: \(reason)"
        case .diskFull: return "event log disk full"
        case .io(let call, let code, let path): return "\(call)(\(path)) failed: \(String(cString: strerror(code)))"
        case .corrupt(let path, let offset, let reason):
            return "corrupt frame in \(path) at offset \(offset): \(reason)"
        case .tooLarge(let bytes, let limit): return "append of \(bytes) bytes exceeds the frame limit of \(limit)"
        case .invalidRecord(let reason): return "invalid record: \(reason)"
        case .invalidConfiguration(let reason): return "invalid event log configuration: \(reason)"
        }
    }

    /// True when the caller should answer 503 and retry later.
    package var isRetryable: Bool {
        switch self {
        case .unavailable, .diskFull, .io: return true
        default: return false
        }
    }
}
