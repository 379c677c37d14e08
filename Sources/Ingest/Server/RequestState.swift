import Locking

/// Per-request state that libmicrohttpd keeps for us in `*con_cls` between callbacks.
///
/// `@unchecked Sendable` invariant: libmicrohttpd calls every callback of one connection from the
/// one worker thread that owns it, so all stored properties except `pending` are touched by that
/// thread only. `pending` is the hand-over from the thread that finishes a suspended request; it
/// sits in a `Locked`, and `MHD_resume_connection` happens after it is set.
final class RequestState: @unchecked Sendable {
    let route: String
    let started: ContinuousClock.Instant
    let limit: Int
    let context: any Sendable
    var body: [UInt8] = []
    /// Bytes received on the wire, including discarded ones.
    var bytesIn = 0
    /// Bytes thrown away after the limit was crossed.
    var discarded = 0
    var isAnswered = false
    /// An answer decided from the head, sent once the (small) body has been read and dropped.
    var earlyResponse: HTTPResponse?
    let pending = Locked<HTTPResponse?>(nil)

    init(route: String, started: ContinuousClock.Instant, limit: Int, context: any Sendable) {
        self.route = route
        self.started = started
        self.limit = limit
        self.context = context
    }

    /// What to do with one chunk of body.
    enum ChunkAction: Equatable {
        case keep
        /// The body crossed the limit; keep discarding until the upload ends, then answer 413.
        case discard
        /// The client keeps streaming far past the limit: close the connection.
        case close
    }

    /// The body-limit state machine: keeps bytes until `limit`, then only counts them.
    func receive(_ chunk: UnsafeRawBufferPointer) -> ChunkAction {
        bytesIn += chunk.count
        if discarded == 0, body.count + chunk.count <= limit {
            body.append(contentsOf: chunk)
            return .keep
        }
        if discarded == 0 { body = [] }
        discarded += chunk.count
        return discarded > limit ? .close : .discard
    }

    var isOverLimit: Bool { discarded > 0 }
}
