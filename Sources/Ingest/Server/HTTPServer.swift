internal import CMicroHTTPD
import Foundation
import Locking
import Observability
import Synchronization

/// Settings `HTTPServer` needs from `IngestConfiguration`.
package struct HTTPServerSettings: Sendable {
    /// IPv4 address to bind.
    package var host: String
    /// Port to bind; 0 picks an ephemeral port.
    package var port: UInt16
    /// Worker threads, one poll loop each.
    package var threads: Int
    /// Most open connections.
    package var connectionLimit: Int
    /// Most connections per client IP; 0 = unlimited.
    package var perIPConnectionLimit: Int
    /// Idle seconds before a connection is closed.
    package var connectionTimeoutSeconds: Int
    /// libmicrohttpd's memory per connection (request head and read buffer).
    package var connectionMemoryBytes: Int
    /// Seconds `shutdown()` waits for in-flight requests.
    package var shutdownGraceSeconds: Int
    /// Body bytes held at once across all requests (`IngestConfiguration.maxBufferedBodyBytes`).
    package var maxBufferedBodyBytes: Int

    /// Takes the HTTP settings from an ingest configuration.
    package init(_ configuration: IngestConfiguration) {
        host = configuration.host
        port = configuration.port
        threads = configuration.threads
        connectionLimit = configuration.connectionLimit
        perIPConnectionLimit = configuration.perIPConnectionLimit
        connectionTimeoutSeconds = configuration.connectionTimeoutSeconds
        connectionMemoryBytes = configuration.connectionMemoryBytes
        shutdownGraceSeconds = configuration.shutdownGraceSeconds
        maxBufferedBodyBytes = configuration.maxBufferedBodyBytes
    }
}

/// An HTTP/1.1 server on libmicrohttpd: internal poll loops on a thread pool, keep-alive,
/// connection limits and idle timeouts. It owns the daemon: `shutdown()` (or deinit) stops
/// accepting, lets in-flight requests finish within the grace period, then stops the daemon.
package final class HTTPServer: Sendable {
    /// The port the server is bound to (the ephemeral one when configured with port 0).
    package let port: UInt16
    private let core: ServerCore
    private let daemon: Locked<DaemonHandle?>
    /// Held for the whole of `shutdown()`, so a second call returns only once the daemon has
    /// stopped and the listening socket is closed (not while the first call is still waiting).
    private let stopping = Locked(())

    /// Binds and starts serving `handler` on the settings' address.
    /// `budget`: what bodies are charged to; the handler may charge the same one (ingest charges
    /// a request's envelope lines until they are durable). Default: one of the settings'
    /// `maxBufferedBodyBytes` for bodies alone.
    package init(
        settings: HTTPServerSettings, handler: any HTTPHandler, budget: RequestBudget? = nil
    ) throws(HTTPServerError) {
        let (fd, boundPort) = try ListeningSocket.open(host: settings.host, port: settings.port, backlog: 1024)
        let core = ServerCore(
            handler: handler, budget: budget ?? RequestBudget(limit: settings.maxBufferedBodyBytes))
        let cls = Unmanaged.passUnretained(core).toOpaque()
        // No listening socket for libmicrohttpd: `Acceptor` accepts and hands connections over,
        // alternating between the loops, and holds the connection limit. libmicrohttpd's own limit
        // (which it splits between the loops) is kept out of reach, each loop's share at least the
        // whole limit: a loop refusing a handed-over connection deadlocks in 0.9.75 (Acceptor).
        // (Clamped: libmicrohttpd reads it as an unsigned int; no descriptor limit reaches it.)
        let loops = max(settings.threads, 1)
        let outOfReach = min((min(settings.connectionLimit, 1 << 24) + 64) * loops, Int(Int32.max))
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(option: .CONNECTION_LIMIT, value: outOfReach, ptr_value: nil),
            MHD_OptionItem(
                option: .CONNECTION_TIMEOUT, value: settings.connectionTimeoutSeconds, ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_MEMORY_LIMIT, value: settings.connectionMemoryBytes, ptr_value: nil),
            MHD_OptionItem(
                option: .NOTIFY_COMPLETED,
                value: Int(bitPattern: CMicroHTTPD_completedCallbackPointer(requestCompleted)), ptr_value: cls),
            MHD_OptionItem(
                option: .NOTIFY_CONNECTION,
                value: Int(bitPattern: CMicroHTTPD_connectionCallbackPointer(connectionChanged)), ptr_value: cls),
        ]
        if settings.threads > 1 {
            options.append(MHD_OptionItem(option: .THREAD_POOL_SIZE, value: settings.threads, ptr_value: nil))
        }
        if settings.perIPConnectionLimit > 0 {
            options.append(
                MHD_OptionItem(
                    option: .PER_IP_CONNECTION_LIMIT, value: settings.perIPConnectionLimit, ptr_value: nil))
        }
        options.append(MHD_OptionItem(option: .END, value: 0, ptr_value: nil))
        // poll(), not epoll: every suspend and resume costs an `epoll_ctl` (docs/ingest-performance.md, "Why poll").
        let flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_NO_LISTEN_SOCKET.rawValue
        let started = options.withUnsafeBufferPointer {
            CMicroHTTPD_start(UInt32(flags), 0, accessHandler, cls, $0.baseAddress)
        }
        guard let started else {
            close(fd)
            throw .daemonStartFailed
        }
        self.port = boundPort
        self.core = core
        let acceptor = Acceptor(listenFD: fd, daemon: started, limit: settings.connectionLimit, core: core)
        self.daemon = Locked(
            DaemonHandle(pointer: started, listenFD: fd, acceptor: acceptor, grace: settings.shutdownGraceSeconds))
    }

    /// Stops accepting connections, waits (up to the grace period) for in-flight requests to be
    /// answered, then stops the daemon. Safe to call more than once, from any thread: every call
    /// returns once the daemon has stopped.
    package func shutdown() {
        stopping.withLock { _ in stop() }
    }

    /// Stops accepting connections and shuts the listening socket down (new clients are refused),
    /// without waiting for anything else: the first step of `shutdown()`, for a caller with work of
    /// its own to wait for before it (the report queue). Safe to call more than once.
    package func stopAccepting() {
        daemon.withLock { $0?.acceptor }?.stop()
    }

    private func stop() {
        guard let handle = daemon.withLock({ $0.take() }) else { return }
        // Stopping the acceptor also shuts the socket down: the kernel would otherwise go on
        // completing handshakes into the backlog, and those clients would wait out the grace period
        // for a reset; now new connections are refused, which a load balancer retries elsewhere.
        handle.acceptor.stop()
        let deadline = ContinuousClock.now + .seconds(handle.grace)
        while core.inFlight.load(ordering: .acquiring) > 0, ContinuousClock.now < deadline {
            usleep(2000)
        }
        // A suspended connection must be resumed before the daemon stops (its memory is freed
        // there, and the finishing thread still holds its pointer), and none may be suspended
        // after this: a request finished from now on is answered 503 `shutting_down`. Their work
        // is bounded by the sink's own timeouts, so this waits without a deadline.
        core.closeSuspensions()
        MHD_stop_daemon(handle.pointer)
        close(handle.listenFD)
    }

    /// Requests that have started and not yet completed.
    package var inFlightRequests: Int { core.inFlight.load(ordering: .relaxed) }

    /// HTTP connections open now (libmicrohttpd's, counted from its connection notifications).
    package var openConnections: Int { core.openConnections.load(ordering: .relaxed) }

    /// Request bytes held now (charged to `maxBufferedBodyBytes`): bodies of requests not yet
    /// completed, and what the handler charged for them.
    package var bufferedBodyBytes: Int { core.budget.heldBytes }

    deinit { shutdown() }
}

/// The libmicrohttpd daemon pointer; only `HTTPServer` touches it, under its mutex.
private struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let listenFD: Int32
    let acceptor: Acceptor
    let grace: Int
}
