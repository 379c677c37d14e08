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
        // there, and the finishing thread still holds its pointer). Their work is bounded by the
        // sink's own timeouts, so this waits without a deadline.
        while core.suspended.load(ordering: .acquiring) > 0 {
            usleep(2000)
        }
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

/// What the C callbacks reach through their `cls` pointer. Outlives the daemon: `HTTPServer`
/// holds it and stops the daemon before releasing it.
final class ServerCore: Sendable {
    let handler: any HTTPHandler
    let inFlight = Atomic<Int>(0)
    /// Connections suspended while their answer is prepared on another thread.
    let suspended = Atomic<Int>(0)
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

/// A libmicrohttpd response holding a copy of `response`'s body, or reading its stream, and its
/// headers; nil when libmicrohttpd cannot allocate one. A stream made while it is sent
/// (`HTTPProducedBody`) suspends `connection` when nothing is ready, counted in `core.suspended`.
private func makeResponse(
    _ response: HTTPResponse, connection: OpaquePointer? = nil, core: ServerCore? = nil
) -> OpaquePointer? {
    let made: OpaquePointer?
    if let stream = response.stream {
        // Owned by the response until libmicrohttpd frees it (`releaseStream`), which it does
        // when the body is sent or the connection ends, and at once when creating it fails.
        let owner = Unmanaged.passRetained(
            StreamOwner(stream, connection: connection.map(SuspendedConnection.init), core: core)
        ).toOpaque()
        made = MHD_create_response_from_callback(sizeUnknown, streamBlockSize, readStream, owner, releaseStream)
    } else {
        made = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
    }
    guard let made else { return nil }
    MHD_add_response_header(made, "Content-Type", response.contentType)
    for (name, value) in response.headers {
        MHD_add_response_header(made, name, value)
    }
    return made
}

/// What libmicrohttpd asks a streamed body for at most at a time.
private let streamBlockSize = 64 * 1024
/// microhttpd.h's `MHD_SIZE_UNKNOWN`, `MHD_CONTENT_READER_END_OF_STREAM` and `_END_WITH_ERROR`
/// (macros with casts, which Swift does not import).
private let sizeUnknown = UInt64.max
private let endOfStream = -1
private let endWithError = -2

/// Carries a body stream (an existential) through libmicrohttpd's `void *`, with what a produced
/// body needs to suspend and resume its connection.
private final class StreamOwner {
    let stream: any HTTPBodyStream
    let produced: (any HTTPProducedBody)?
    let connection: SuspendedConnection?
    let core: ServerCore?

    init(_ stream: any HTTPBodyStream, connection: SuspendedConnection?, core: ServerCore?) {
        self.stream = stream
        self.connection = connection
        self.core = core
        produced = connection != nil && core != nil ? stream as? any HTTPProducedBody : nil
    }

    deinit { produced?.cancel() }
}

private let readStream: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer, max > 0 else { return endWithError }
    let owner = Unmanaged<StreamOwner>.fromOpaque(cls).takeUnretainedValue()
    let target = UnsafeMutableRawBufferPointer(start: buffer, count: max)
    guard let produced = owner.produced, let connection = owner.connection, let core = owner.core else {
        let count = owner.stream.read(into: target)
        return count > 0 ? count : endOfStream
    }
    // Nothing ready: the connection is suspended from here (microhttpd.h allows it in a content
    // reader) and returning 0 asks again once the producer resumes it.
    let count = produced.read(
        into: target,
        suspend: {
            core.suspended.wrappingAdd(1, ordering: .relaxed)
            MHD_suspend_connection(connection.pointer)
        },
        wake: {
            MHD_resume_connection(connection.pointer)
            core.suspended.wrappingSubtract(1, ordering: .releasing)
        })
    return count > 0 ? count : count == 0 ? endOfStream : 0
}

private let releaseStream: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<StreamOwner>.fromOpaque(cls).release()
}

/// A connection pointer carried to the thread that finishes a suspended request.
/// `@unchecked Sendable`: `MHD_resume_connection` is documented thread-safe, and the pointer
/// stays valid while the connection is suspended (it cannot time out or close meanwhile).
private struct SuspendedConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Answers a request the server suspended (`RequestFinish.later`): call it exactly once, from any
/// thread; it hands the answer to the connection's worker and resumes the connection. A value
/// rather than a closure, so whoever keeps it until the answer is known (ingest's log completion)
/// holds it inline instead of pointing to a closure context of its own: one allocation less per
/// deferred request, and one less object freed by the log's thread for the worker's malloc arena.
package struct Completion: Sendable {
    fileprivate let state: RequestState
    fileprivate let connection: SuspendedConnection
    fileprivate let core: ServerCore

    /// Sends `response` as the request's answer.
    package func callAsFunction(_ response: HTTPResponse) {
        state.setAnswer(response)
        MHD_resume_connection(connection.pointer)
        core.suspended.wrappingSubtract(1, ordering: .releasing)
    }
}

private let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadSize, conCls in
    guard let cls, let connection, let conCls, let uploadSize else { return .NO }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    guard let existing = conCls.pointee else {
        return begin(core: core, connection: connection, url: url, method: method, conCls: conCls)
    }
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
    if state.isAnswered {
        // Resumed after a deferred answer.
        guard let response = state.takeAnswer() else { return .YES }
        return queue(response, on: connection, state: state, core: core)
    }
    if uploadSize.pointee > 0, let uploadData {
        let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
        uploadSize.pointee = 0
        if state.earlyResponse != nil {
            state.bytesIn += chunk.count
            return .YES
        }
        guard state.receive(chunk, core: core) == .close else { return .YES }
        // libmicrohttpd takes no answer in the middle of an upload, so the connection is closed
        // without one; it is still counted, as the answer it would have had at the body's end.
        let refusal = refusal(for: state, core: core)
        core.handler.completed(
            route: state.route, status: refusal.status, code: refusal.errorCode, bytesIn: state.bytesIn,
            started: state.started)
        return .NO
    }
    state.isAnswered = true
    if let early = state.earlyResponse {
        return queue(early, on: connection, state: state, core: core)
    }
    if state.isOverBudget || state.isOverLimit {
        return queue(refusal(for: state, core: core), on: connection, state: state, core: core)
    }
    let body = state.body
    state.body = []
    switch core.handler.finish(context: state.context, body: body) {
    case .respond(let response):
        return queue(response, on: connection, state: state, core: core)
    case .later(let start):
        core.suspended.wrappingAdd(1, ordering: .relaxed)
        MHD_suspend_connection(connection)
        start(Completion(state: state, connection: SuspendedConnection(pointer: connection), core: core))
        return .YES
    }
}

/// The answer to a body that was dropped: 503 `overloaded` when the server's body budget was full,
/// else the handler's 413 for a body over its limit.
private func refusal(for state: RequestState, core: ServerCore) -> HTTPResponse {
    if state.isOverBudget { return HTTPResponse(error: .overloaded) }
    return core.handler.bodyTooLarge(context: state.context, limit: state.limit)
}

/// Bodies up to this size are read and dropped when the answer is known from the head.
private let smallBodyDiscardLimit = 64 * 1024

private func begin(
    core: ServerCore, connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
    conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>
) -> MHD_Result {
    let started = MonotonicInstant.now
    var head = RequestHead(
        method: method.map { core.string($0) { String(cString: $0) } } ?? "",
        path: url.map { core.string($0) { requestPath(String(cString: $0)) } } ?? "/",
        connection: connection)
    head.contentLength = head.withHeader("Content-Length") { $0.flatMap(decimalInteger) }
    core.inFlight.wrappingAdd(1, ordering: .relaxed)
    let state: RequestState
    var early: HTTPResponse?
    switch core.handler.begin(head) {
    case .respond(let response, let route):
        state = RequestState(route: route, started: started, limit: 0, context: ())
        early = response
    case .readBody(let limit, let route, let context):
        state = RequestState(route: route, started: started, limit: limit, context: context)
        state.declaredLength = head.contentLength
        // The body arrives in chunks of the connection's read buffer: sized once from
        // Content-Length (within the limit), it is not regrown and copied on the way. The
        // reservation is charged to the budget first: reused heap memory is resident already, so
        // 200 reserved 600 KB bodies held ~115 MB while the budget counted only the bytes received.
        // A body the budget cannot reserve for is charged as it arrives (and dropped when a chunk
        // does not fit).
        if let declared = head.contentLength, declared > 0, declared <= limit {
            if core.chargeBody(declared, bodyBytes: declared) {
                state.charged = declared
                state.body.reserveCapacity(declared)
            } else if head.awaitsContinue {
                // A client waiting for `100 Continue` has sent nothing yet: it is told now that the
                // server is full (503 with Retry-After, before any upload), instead of being invited
                // to send a body that would most likely be dropped once a chunk did not fit.
                state.isOverBudget = true
                early = refusal(for: state, core: core)
            }
        }
    }
    state.isHead = head.method == "HEAD"
    conCls.pointee = Unmanaged.passRetained(state).toOpaque()
    if let early {
        // libmicrohttpd closes the connection when a response is queued before the request is
        // fully received. Small bodies are read and dropped so the connection stays alive; large
        // or chunked ones are cut off right away, and so are bodies a client holds back until it
        // sees `100 Continue` (RFC 9110 10.1.1): reading those would send it `100 Continue` and have
        // it upload a body only to be refused.
        let chunked = head.header("Transfer-Encoding") != nil
        let declared = head.contentLength ?? 0
        let awaitsContinue = declared > 0 && head.awaitsContinue
        if !chunked, !awaitsContinue, declared <= smallBodyDiscardLimit, early.status != 413 {
            state.earlyResponse = early
            return .YES
        }
        state.isAnswered = true
        return queue(early, on: connection, state: state, core: core)
    }
    return .YES
}

/// `bytes` read as `Int(String)` reads decimal text (an optional sign, then at least one digit,
/// nothing else), nil otherwise or when out of range; without making a String first.
func decimalInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    var index = 0
    var negative = false
    if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
        negative = first == UInt8(ascii: "-")
        index = 1
    }
    guard index < bytes.count else { return nil }
    var value = 0
    while index < bytes.count {
        let digit = Int(bytes[index]) &- 48
        guard (0...9).contains(digit) else { return nil }
        let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (next, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
        guard !overflow1, !overflow2 else { return nil }
        value = next
        index += 1
    }
    return value
}

/// The path of a request target: origin form (`/api/...`, what clients send to a server) as it is;
/// absolute form (`http://host:port/api/...`, which RFC 9112 3.2.2 says a server must accept) without
/// its scheme and authority, `/` when it has no path. libmicrohttpd 0.9.75 passes either as it came
/// (without the query string), and the absolute one matched no route (404).
func requestPath(_ target: String) -> String {
    guard let first = target.utf8.first, first != UInt8(ascii: "/") else { return target }
    guard let scheme = target.range(of: "://") else { return target }
    let name = target[..<scheme.lowerBound].lowercased()
    guard name == "http" || name == "https" else { return target }
    let afterAuthority = target[scheme.upperBound...]
    guard let slash = afterAuthority.firstIndex(of: "/") else { return "/" }
    return String(afterAuthority[slash...])
}

extension RequestHead {
    /// The client holds its body back until it sees `100 Continue` (`Expect: 100-continue`, RFC
    /// 9110 10.1.1): a refusal can reach it before it uploads anything.
    var awaitsContinue: Bool { header("Expect")?.lowercased() == "100-continue" }

    /// Looks up a request header by name, case-insensitively (invalid UTF-8 is repaired).
    package func header(_ name: String) -> String? {
        withHeader(name) { $0.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// Runs `body` with a request header's value as bytes (nil when absent), without making a
    /// String of it (for values compared or cut, not kept).
    package func withHeader<Result, Failure: Error>(
        _ name: String, _ body: (UnsafeBufferPointer<UInt8>?) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var value: UnsafePointer<CChar>?
        var length = 0
        // withCString: a literal name is passed as it is stored (passing the String itself made an
        // array copy of it for every lookup).
        let found = name.withCString { key in
            MHD_lookup_connection_value_n(connection, .HEADER_KIND, key, strlen(key), &value, &length)
        }
        guard found == .YES, let value else { return try body(nil) }
        return try value.withMemoryRebound(to: UInt8.self, capacity: length) { (bytes) throws(Failure) in
            // Whitespace around a field value is not part of it (RFC 9112 §5). libmicrohttpd 0.9.75
            // drops the leading but keeps the trailing: `X-App-ID: app_1 ` was 403 for app "app_1 ",
            // and `X-SDK: ios/1.0.2 ` was stored with its blank. One byte compare when there is none.
            var end = length
            while end > 0, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            return try body(UnsafeBufferPointer(start: bytes, count: end))
        }
    }

    /// The query-string arguments in order (percent-decoded by libmicrohttpd; a name without `=`
    /// has an empty value), or nil when there are more than `limit` of them.
    package func arguments(_ limit: Int) -> [(name: String, value: String)]? {
        queryArguments(of: connection, limit: limit)
    }
}

/// Collects query-string arguments for `queryArguments`; reached through the iterator's `cls`.
private final class ArgumentCollector {
    let limit: Int
    var pairs: [(name: String, value: String)] = []
    var isOverLimit = false
    init(limit: Int) { self.limit = limit }
}

/// The connection's query arguments, or nil when there are more than `limit`. libmicrohttpd has
/// already split them inside its per-connection memory pool (which bounds the URL); the iteration
/// stops after `limit + 1`, so no more than that many are copied into Swift strings.
private func queryArguments(of connection: OpaquePointer, limit: Int) -> [(name: String, value: String)]? {
    let collector = ArgumentCollector(limit: limit)
    withExtendedLifetime(collector) {
        let cls = Unmanaged.passUnretained(collector).toOpaque()
        _ = MHD_get_connection_values(
            connection, .GET_ARGUMENT_KIND,
            { cls, _, key, value in
                guard let cls else { return .NO }
                let collector = Unmanaged<ArgumentCollector>.fromOpaque(cls).takeUnretainedValue()
                guard collector.pairs.count < collector.limit else {
                    collector.isOverLimit = true
                    return .NO
                }
                collector.pairs.append(
                    (key.map { String(cString: $0) } ?? "", value.map { String(cString: $0) } ?? ""))
                return .YES
            }, cls)
    }
    return collector.isOverLimit ? nil : collector.pairs
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer, state: RequestState, core: ServerCore)
    -> MHD_Result
{
    // libmicrohttpd 0.9.75 ends a chunked answer to HEAD with the last-chunk line anyway, which the
    // client reads as the start of the next answer on the connection: HEAD gets the body read whole,
    // so its headers carry the Content-Length the body has, and no body is sent.
    let response = state.isHead && response.stream != nil ? response.readWhole() : response
    let result: MHD_Result
    if let shared = core.sharedResponse(for: response) {
        result = MHD_queue_response(connection, UInt32(response.status), shared)
    } else {
        guard let made = makeResponse(response, connection: connection, core: core) else { return .NO }
        result = MHD_queue_response(connection, UInt32(response.status), made)
        MHD_destroy_response(made)
    }
    core.handler.completed(
        route: state.route, status: response.status, code: response.errorCode, bytesIn: state.bytesIn,
        started: state.started)
    return result
}

/// Uncounts a closed connection for `Acceptor`, which counted it when handing it over
/// (libmicrohttpd calls this on the connection's loop).
private let connectionChanged: MHD_NotifyConnectionCallback = { cls, _, _, change in
    guard let cls else { return }
    // MHD_CONNECTION_NOTIFY_CLOSED = 1 (microhttpd.h); STARTED (0) is counted at the hand-over.
    guard change.rawValue == 1 else { return }
    Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue().openConnections
        .wrappingSubtract(1, ordering: .relaxed)
}

private let requestCompleted: MHD_RequestCompletedCallback = { cls, _, conCls, _ in
    guard let cls, let conCls, let pointer = conCls.pointee else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(pointer)
    // The body's bytes leave the budget when the request is over, whichever way it ended.
    core.releaseBody(state.takeUnretainedValue().charged)
    state.release()
    conCls.pointee = nil
    core.inFlight.wrappingSubtract(1, ordering: .relaxed)
}
