import Observability
import Synchronization

/// Per-request state that libmicrohttpd keeps for us in `*con_cls` between callbacks.
///
/// `@unchecked Sendable` invariant: libmicrohttpd calls every callback of one connection from the
/// one worker thread that owns it, so all stored properties except `answer` are touched by that
/// thread only. `answer` is the hand-over from the thread that finishes a suspended request: it is
/// written once, then published with a releasing store to `hasAnswer`, then the connection is
/// resumed; the worker reads it only after an acquiring load sees `hasAnswer`. (An atomic flag in
/// the object, not a lock object beside it: that was two allocations per request, the lock and its
/// pthread mutex; ThreadSanitizer checks atomics as it checks locks.)
///
/// `@exclusivity(unchecked)` on the body and its counts, which every chunk updates: the run-time
/// check of each access to a class's stored `var` (~80 instructions) guards against overlapping
/// accesses, and the one thread that touches them makes none.
final class RequestState: @unchecked Sendable {
    let route: String
    let started: MonotonicInstant
    let limit: Int
    let context: any Sendable
    @exclusivity(unchecked) var body: [UInt8] = []
    /// Bytes received on the wire, including discarded ones.
    @exclusivity(unchecked) var bytesIn = 0
    /// Bytes thrown away after the limit (or the server's body budget) was crossed.
    @exclusivity(unchecked) var discarded = 0
    /// Bytes of body charged to the server's budget (`ServerCore.chargeBody`), given back when
    /// the request completes: what was received, or the declared `Content-Length` when the body's
    /// buffer was reserved for it ahead (with its first bytes, `receive`; from the head when the
    /// client awaits `100 Continue`, `begin`).
    @exclusivity(unchecked) var charged = 0
    /// A declared `Content-Length` (within the limit) to reserve the body's buffer for when its first
    /// bytes arrive; 0 when there is none to reserve or it was tried. Not from the head: a client that
    /// sends a head and nothing more (a stalled mobile connection, a slow client on purpose) held its
    /// declared length of the budget until the idle timeout, and a few hundred of them declaring SDK
    /// sizes took the small requests' reserve (until 2026-12-04).
    @exclusivity(unchecked) var reservation = 0
    /// The body's declared `Content-Length`, nil when chunked. Whether the body may use the budget's
    /// reserve for small requests (`RequestBudget.smallRequestBytes`) is decided on it: a body
    /// declared larger, or not declared, is not small, whatever it has received so far.
    var declaredLength: Int?
    /// The server's body budget was full when a chunk came: the body is dropped, the answer is 503.
    var isOverBudget = false
    var isAnswered = false
    /// A HEAD request: its answer's headers only, so a streamed body is read whole first (below).
    var isHead = false
    /// An answer decided from the head, sent once the (small) body has been read and dropped.
    var earlyResponse: HTTPResponse?
    private var answer: HTTPResponse?
    private let hasAnswer = Atomic<Bool>(false)

    init(route: String, started: MonotonicInstant, limit: Int, context: any Sendable) {
        self.route = route
        self.started = started
        self.limit = limit
        self.context = context
    }

    /// From the finishing thread, once, before the connection is resumed: the deferred answer.
    func setAnswer(_ response: HTTPResponse) {
        answer = response
        hasAnswer.store(true, ordering: .releasing)
    }

    /// On the worker, once resumed: the deferred answer, or nil when none was set (or it was taken).
    func takeAnswer() -> HTTPResponse? {
        guard hasAnswer.load(ordering: .acquiring) else { return nil }
        defer { answer = nil }
        return answer
    }

    /// What to do with one chunk of body.
    enum ChunkAction: Equatable {
        case keep
        /// The body crossed the limit; keep discarding until the upload ends, then answer 413.
        case discard
        /// The client keeps streaming past twice the limit: close the connection.
        case close
    }

    /// The body-limit state machine: keeps bytes until `limit` (each chunk charged to `core`'s
    /// budget first), then only counts them, and gives up once more than twice `limit` arrived.
    /// Measured on everything received, not on the bytes dropped: a small limit (a report's 4 KiB)
    /// can be crossed by a single read of more than twice it, which then closed the connection at once.
    /// Sizes the body's buffer once for its declared `length` (not regrown and copied on the way),
    /// charging the reservation to `core`'s budget first: reused heap memory is resident already, so
    /// 200 reserved 600 KB bodies held ~115 MB while the budget counted only the bytes received.
    /// False, and nothing reserved, when the budget cannot take it.
    func reserve(_ length: Int, core: ServerCore) -> Bool {
        guard core.chargeBody(length, bodyBytes: length) else { return false }
        charged = length
        body.reserveCapacity(length)
        return true
    }

    func receive(_ chunk: UnsafeRawBufferPointer, core: ServerCore) -> ChunkAction {
        if reservation > 0 {
            // The body has begun. Refused, it is charged as it arrives (below).
            _ = reserve(reservation, core: core)
            reservation = 0
        }
        bytesIn += chunk.count
        if discarded == 0, body.count + chunk.count <= limit {
            // Bytes past what is charged already (none while a reserved body fills its reservation).
            // Only a body declared small is: the first chunks of a large batch whose reservation was
            // refused, or of a chunked one (whose size nobody knows until it ends; the SDKs declare
            // theirs), took the reserve meant for SDK events while their first 64 KiB arrived.
            let uncharged = max(0, body.count + chunk.count - charged)
            let size = max(body.count + chunk.count, declaredLength ?? .max)
            if uncharged == 0 || core.chargeBody(uncharged, bodyBytes: size) {
                charged += uncharged
                body.append(contentsOf: chunk)
                return .keep
            }
            isOverBudget = true
        }
        if discarded == 0 {
            body = []
            core.releaseBody(charged)
            charged = 0
        }
        discarded += chunk.count
        return bytesIn > 2 * limit ? .close : .discard
    }

    var isOverLimit: Bool { discarded > 0 }
}
