internal import CMicroHTTPD
import EventLog
import Foundation
import Observability
import Synchronization

/// Accepts connections on the listening socket on its own thread and hands each to
/// libmicrohttpd with `MHD_add_connection`, which gives it to one of the poll loops by its
/// descriptor (descriptor modulo loops): consecutive connections alternate between the loops.
///
/// Why not libmicrohttpd's own accept: every loop polls the shared listening socket and whichever
/// wakes first takes the connection, so a burst of connections (a client pool opening, wrk's 64)
/// landed unevenly: over eight starts of `serve` under the single-event benchmark the loops' shares
/// ranged from 0.48/0.52 to 0.00/1.00, and the two even starts were the fastest (docs/ingest-performance.md,
/// "Balanced loops").
///
/// At the connection limit it stops accepting, as libmicrohttpd does: further clients wait in the
/// listen queue (bounded by its backlog) until a connection closes. `openConnections` counts the
/// connections handed over (here) that libmicrohttpd has not reported closed. libmicrohttpd's own
/// limit is set above ours (`HTTPServer`) so that it never refuses a handed-over connection itself:
/// in 0.9.75 a loop that does so deadlocks (seen under the test suite's load: the loop thread
/// waiting for a mutex it held itself; docs/ingest-performance.md, "Balanced loops").
/// A connection libmicrohttpd cannot start for lack of memory (its pool) is never reported closed
/// and stays counted.
final class Acceptor: @unchecked Sendable {
    // @unchecked Sendable: `daemon` is thread-safe for MHD_add_connection (it signals the loops
    // through their inter-thread channel); the rest is immutable or atomic.
    private let listenFD: Int32
    private let daemon: OpaquePointer
    private let limit: Int
    private let core: ServerCore
    private let stopping = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)

    /// Starts accepting on `listenFD` (made non-blocking here) for `daemon`, while `core`'s
    /// open connections are under `limit`.
    init(listenFD: Int32, daemon: OpaquePointer, limit: Int, core: ServerCore) {
        self.listenFD = listenFD
        self.daemon = daemon
        self.limit = limit
        self.core = core
        _ = fcntl(listenFD, F_SETFL, fcntl(listenFD, F_GETFL) | O_NONBLOCK)
        Thread.startNamed("http-accept") { [self] in
            run()
            exited.signal()
        }
    }

    /// Stops accepting and returns once the thread has ended. The socket stays open (the caller
    /// closes it) but is shut down: new connections are refused, which a load balancer retries
    /// elsewhere, instead of completing handshakes into a queue nobody takes from.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = Glibc.shutdown(listenFD, Int32(SHUT_RDWR))
        exited.wait()
    }

    private func run() {
        var ready = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
        while !stopping.load(ordering: .acquiring) {
            if core.openConnections.load(ordering: .relaxed) >= limit {
                // Full: leave new clients in the listen queue until a connection closes.
                usleep(10_000)
                continue
            }
            // The timeout only bounds how long a stop could go unnoticed; `shutdown` wakes the poll.
            let count = poll(&ready, 1, 500)
            if count > 0 { acceptReady() }
        }
    }

    /// Accepts until the queue is empty (or the limit is reached) and hands each connection over.
    private func acceptReady() {
        while !stopping.load(ordering: .relaxed), core.openConnections.load(ordering: .relaxed) < limit {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listenFD, $0, &length) }
            }
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors or memory: the client waits in the queue; try again soon.
                    // libmicrohttpd's own accept logged nothing here either; the process metrics show
                    // the descriptors in use.
                    usleep(10_000)
                    return
                default: return  // EAGAIN: the queue is empty; EINVAL: shut down
                }
            }
            // (`accept4`, which sets both flags at once, is not in Swift's Glibc module; connections
            // are long-lived, so two more calls per connection do not matter.)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            // libmicrohttpd owns the descriptor from here and closes it if it refuses it (the per-IP
            // limit), reporting nothing: then it is not counted.
            core.openConnections.wrappingAdd(1, ordering: .relaxed)
            let added = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { MHD_add_connection(daemon, fd, $0, length) }
            }
            if added != .YES { core.openConnections.wrappingSubtract(1, ordering: .relaxed) }
        }
    }
}
