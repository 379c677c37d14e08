internal import CMicroHTTPD
import Foundation
import Synchronization

/// What the C callbacks reach through their `cls` pointer. Outlives the daemon: `HTTPServer`
/// holds it and stops the daemon before releasing it.
final class ServerCore: Sendable {
    let handler: any HTTPHandler
    let inFlight = Atomic<Int>(0)
    /// Connections suspended while their answer is prepared on another thread, plus
    /// `stoppingBit` once `HTTPServer.stop` closed the gate (`enterSuspension`).
    let suspended = Atomic<Int>(0)
    /// Set in `suspended` when the server stops: no connection is suspended after it.
    static let stoppingBit = 1 << 62

    /// Counts a connection its handler is about to suspend; false once the server is stopping, and
    /// the caller answers at once instead. `MHD_stop_daemon` must not run while a connection is
    /// suspended (microhttpd.h: an API violation; 0.9.7x panics): until 2026-12-04 a request whose
    /// body ended after `stop` had seen no suspended connection was still suspended, and the
    /// daemon stopped under it.
    func enterSuspension() -> Bool {
        var current = suspended.load(ordering: .relaxed)
        while current & Self.stoppingBit == 0 {
            let (exchanged, original) = suspended.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Closes the gate of `enterSuspension` and waits until no connection is suspended.
    func closeSuspensions() {
        suspended.bitwiseOr(Self.stoppingBit, ordering: .acquiringAndReleasing)
        while suspended.load(ordering: .acquiring) & ~Self.stoppingBit > 0 { usleep(2000) }
    }
    /// Connections handed to libmicrohttpd and not yet reported closed; `Acceptor` stops taking
    /// new ones at the connection limit.
    let openConnections = Atomic<Int>(0)
    /// The handler's `sharedResponses`, built once; destroyed with the core, after the daemon.
    let shared: [SharedResponse]
    /// Bytes of body received and held by requests not yet completed are charged here (with what
    /// the handler charges for them), up to its limit.
    let budget: RequestBudget

    /// Request targets and methods met on every request (the handler's `knownStrings`), with
    /// their bytes: a request's method and path are taken from here when they equal one, instead
    /// of a String made from the C string (and for a path longer than 15 bytes, allocated and
    /// freed) each time.
    let interned: [(bytes: [UInt8], string: String)]

    init(handler: any HTTPHandler, budget: RequestBudget) {
        self.handler = handler
        self.shared = handler.sharedResponses.compactMap(SharedResponse.init)
        self.budget = budget
        self.interned = handler.knownStrings.map { (Array($0.utf8), $0) }
    }

    /// `text` as a String: an interned one when equal to it, else a new one made by `make`.
    func string(_ text: UnsafePointer<CChar>, orElse make: (UnsafePointer<CChar>) -> String) -> String {
        let length = strlen(text)
        for entry in interned where entry.bytes.count == length {
            if entry.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, text, length) == 0 }) {
                return entry.string
            }
        }
        return make(text)
    }

    /// A core with a budget of `maxBufferedBodyBytes` for bodies alone.
    convenience init(handler: any HTTPHandler, maxBufferedBodyBytes: Int) {
        self.init(handler: handler, budget: RequestBudget(limit: maxBufferedBodyBytes))
    }

    /// Charges `bytes` of a body of `bodyBytes` so far (with them) to the budget; false (and
    /// nothing charged) when they would cross it.
    func chargeBody(_ bytes: Int, bodyBytes: Int) -> Bool { budget.charge(bytes, bodyBytes: bodyBytes) }

    /// Gives `bytes` charged by `chargeBody` back to the budget.
    func releaseBody(_ bytes: Int) { budget.release(bytes) }

    /// The prebuilt libmicrohttpd response for `response`, if it is one of the shared ones.
    func sharedResponse(for response: HTTPResponse) -> OpaquePointer? {
        shared.first { $0.matches(response) }?.pointer
    }

    deinit {
        for response in shared { MHD_destroy_response(response.pointer) }
    }
}

/// A libmicrohttpd response built once and queued on any number of connections: libmicrohttpd
/// counts its references under the response's own mutex and only reads it while sending
/// (microhttpd.h: a response may be queued for several connections). Saves creating, filling
/// and freeing a response (about five allocations) for the answer most requests get.
/// `@unchecked Sendable`: the pointer is only queued after `init`, never changed.
struct SharedResponse: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The answer it was built from.
    let source: HTTPResponse

    init?(_ response: HTTPResponse) {
        guard response.headers.isEmpty, let made = makeResponse(response) else { return nil }
        pointer = made
        source = response
    }

    /// Whether `response` is the answer this was built from: a copy of it (what the handler
    /// hands on, found without comparing bytes), or an equal one.
    func matches(_ response: HTTPResponse) -> Bool {
        if response.isCopy(of: source) { return true }
        return response.stream == nil && response.status == source.status && response.body == source.body
            && response.contentType == source.contentType && response.headers.isEmpty
    }
}
