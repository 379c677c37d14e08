import Foundation
import Observability
import Synchronization
import TestSupport
import Testing

@testable import Ingest

@Suite("Ingest building blocks")
struct UnitTests {
    @Test("Content-Length is read from its bytes exactly as Int(String) reads it")
    func decimalIntegers() {
        let texts = [
            "0", "297", "+5", "-5", "", "+", "-", "12a", " 1", "1 ", "00042", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "1e3", "0x10", "٣",
        ]
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789+- a".utf8)
        let random = (0..<500).map { _ in
            String(
                decoding: (0..<Int.random(in: 0...22, using: &generator)).map { _ in
                    alphabet.randomElement(using: &generator)!
                }, as: UTF8.self)
        }
        for text in texts + random {
            let got = Array(text.utf8).withUnsafeBufferPointer { decimalInteger($0) }
            #expect(got == Int(text), "\(text)")
        }
    }

    @Test("the default configuration is valid and every bad field is named")
    func configuration() throws {
        try IngestConfiguration().validate()
        var bad = IngestConfiguration()
        bad.host = "localhost:80"
        #expect(
            throws: IngestConfigurationError.invalid(field: "host", reason: "must be an IPv4 address such as 127.0.0.1")
        ) {
            try bad.validate()
        }
        for (field, change) in [
            ("threads", { (c: inout IngestConfiguration) in c.threads = 0 }),
            ("maxDecompressedBytes", { $0.maxDecompressedBytes = $0.maxBodyBytes - 1 }),
            ("keyRefreshInterval", { $0.keyRefreshInterval = .seconds(60) }),
            ("rateLimitPerSecond", { $0.rateLimitPerSecond = 0 }),
        ] as [(String, (inout IngestConfiguration) -> Void)] {
            var configuration = IngestConfiguration()
            change(&configuration)
            do {
                try configuration.validate()
                Issue.record("\(field) accepted")
            } catch {
                #expect("\(error)".contains(field))
            }
        }
    }

    @Test("the default request budget holds the largest request, so serve starts without the budget warning")
    func budgetHoldsTheLargestRequest() {
        let defaults = IngestConfiguration()
        #expect(defaults.largestRequestBytes == (1 << 20) + (10 << 20) / 10 * 13)
        #expect(defaults.maxBufferedBodyBytes >= defaults.largestRequestBytes)
        var small = defaults
        small.maxBufferedBodyBytes = 8 << 20
        #expect(small.maxBufferedBodyBytes < small.largestRequestBytes)
        small.maxDecompressedBytes = 4 << 20
        #expect(small.maxBufferedBodyBytes >= small.largestRequestBytes)
        // The flags take sizes up to 8 EiB: a huge limit saturates instead of trapping at start.
        small.maxDecompressedBytes = 7 << 60
        #expect(small.largestRequestBytes == .max)
    }

    /// A handler that is never called: `ServerCore` needs one to exist.
    struct UnusedHandler: HTTPHandler {
        static let empty = HTTPResponse(status: 204, body: [])
        func begin(_ head: RequestHead) -> RequestStart { .respond(Self.empty, route: "x") }
        func finish(context: any Sendable, body: [UInt8]) -> RequestFinish { .respond(Self.empty) }
        func bodyTooLarge(context: any Sendable, limit: Int) -> HTTPResponse { Self.empty }
        func completed(route: String, status: Int, code: String?, bytesIn: Int, started: MonotonicInstant) {}
    }

    /// A handler with one prepared answer, as ingest's `{"accepted":1,...}`.
    struct PreparedHandler: HTTPHandler {
        static let accepted = HTTPResponse(status: 200, body: Array(#"{"accepted":1}"#.utf8))
        func begin(_ head: RequestHead) -> RequestStart { .respond(Self.accepted, route: "x") }
        func finish(context: any Sendable, body: [UInt8]) -> RequestFinish { .respond(Self.accepted) }
        func bodyTooLarge(context: any Sendable, limit: Int) -> HTTPResponse { Self.accepted }
        func completed(route: String, status: Int, code: String?, bytesIn: Int, started: MonotonicInstant) {}
        var sharedResponses: [HTTPResponse] { [Self.accepted] }
    }

    @Test(
        "an answer's copies are values: a changed copy leaves the original, and only unchanged or equal answers get the prepared response"
    )
    func responseCopies() {
        let core = ServerCore(handler: PreparedHandler(), maxBufferedBodyBytes: 1 << 20)
        let original = PreparedHandler.accepted
        let copy = original
        #expect(copy.isCopy(of: original))
        #expect(core.sharedResponse(for: copy) != nil)
        // Built again with the same parts: not a copy, but equal, so it is sent prepared too.
        let equal = HTTPResponse(status: 200, body: Array(#"{"accepted":1}"#.utf8))
        #expect(!equal.isCopy(of: original))
        #expect(core.sharedResponse(for: equal) != nil)

        var withHeader = original
        withHeader.headers.append(("Retry-After", "1"))
        var otherStatus = original
        otherStatus.status = 400
        var otherBody = original
        otherBody.body.append(UInt8(ascii: " "))
        var otherType = original
        otherType.contentType = "text/plain"
        for changed in [withHeader, otherStatus, otherBody, otherType] {
            #expect(!changed.isCopy(of: original))
            #expect(core.sharedResponse(for: changed) == nil)
        }
        // The original (a static every request copies) kept its parts.
        #expect(original.status == 200 && original.headers.isEmpty && original.contentType == "application/json")
        #expect(original.body == Array(#"{"accepted":1}"#.utf8))
        #expect(withHeader.body == original.body && withHeader.headers.count == 1)
    }

    @Test("the body state machine keeps bytes up to the limit, then discards, then closes")
    func bodyLimit() {
        let core = ServerCore(handler: UnusedHandler(), maxBufferedBodyBytes: 1 << 20)
        let state = RequestState(route: "event", started: .now, limit: 10, context: ())
        let six = [UInt8](repeating: 1, count: 6)
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .keep) }
        #expect(state.body.count == 6)
        #expect(core.budget.heldBytes == 6)
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .discard) }
        #expect(state.body.isEmpty)
        #expect(state.isOverLimit && !state.isOverBudget)
        // The dropped body leaves the server's budget at once.
        #expect(core.budget.heldBytes == 0)
        // Closed once more than twice the limit arrived in all (18 bytes are not yet 20).
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .discard) }
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .close) }
        #expect(state.bytesIn == 24)
        // One read over the limit but under twice it is dropped, not closed (a report's 4 KiB limit
        // and a 5 KB body in one read: the connection was closed without an answer).
        let single = RequestState(route: "reports_links", started: .now, limit: 10, context: ())
        [UInt8](repeating: 1, count: 15).withUnsafeBytes { #expect(single.receive($0, core: core) == .discard) }
        #expect(single.isOverLimit)
    }

    @Test("the headers the server reads are recognised by name in any case, and only by their exact name")
    func requestHeaderNames() {
        #expect(RequestHeaderName.allCases.allSatisfy { $0.rawValue < RequestHeaders.slots })
        func name(_ text: String) -> RequestHeaderName? {
            text.withCString { RequestHeaderName(key: $0, length: text.utf8.count) }
        }
        for header in RequestHeaderName.allCases {
            let lower = "\(header.lowercased)"
            #expect(name(lower) == header)
            #expect(name(lower.uppercased()) == header)
            // One byte off, or one byte more: another header, or none the server reads.
            #expect(name(String(lower.dropLast()) + "x") != header)
            #expect(name(lower + "s") == nil)
        }
        #expect(name("Content-Type") == .contentType && name("X-Detour-SDK") == .detourSDK)
        #expect(name("Content-Typf") == nil && name("Host") == nil)
    }

    @Test("once the server stops, no connection is suspended, and stopping waits for those that are")
    func suspensionGate() {
        let core = ServerCore(handler: UnusedHandler(), maxBufferedBodyBytes: 1 << 20)
        #expect(core.enterSuspension() && core.enterSuspension())
        let stopped = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            core.closeSuspensions()
            stopped.store(true, ordering: .releasing)
            done.signal()
        }
        // The gate closes at once; stopping waits while two connections are still suspended.
        var closed = false
        for _ in 0..<500 where !closed {  // at most 5 s
            closed = !core.enterSuspension()
            if !closed {
                core.suspended.wrappingSubtract(1, ordering: .releasing)
                usleep(10_000)
            }
        }
        #expect(closed, "a connection could still be suspended while the server stops")
        usleep(50_000)
        let stoppedEarly = stopped.load(ordering: .acquiring)
        #expect(!stoppedEarly)
        core.suspended.wrappingSubtract(1, ordering: .releasing)
        core.suspended.wrappingSubtract(1, ordering: .releasing)
        #expect(done.wait(timeout: .now() + 30) == .success)
        let stoppedAfter = stopped.load(ordering: .acquiring)
        #expect(stoppedAfter)
    }

    @Test("bodies held at once are charged to the server's budget; a chunk that would cross it drops its body")
    func bodyBudget() {
        let core = ServerCore(handler: UnusedHandler(), maxBufferedBodyBytes: 16)
        let six = [UInt8](repeating: 1, count: 6)
        let first = RequestState(route: "batch", started: .now, limit: 100, context: ())
        six.withUnsafeBytes { #expect(first.receive($0, core: core) == .keep) }
        six.withUnsafeBytes { #expect(first.receive($0, core: core) == .keep) }
        // A chunked body (no declared length) may not use the reserve: its size is not known.
        let chunked = RequestState(route: "batch", started: .now, limit: 100, context: ())
        six.withUnsafeBytes { #expect(chunked.receive($0, core: core) == .discard) }
        #expect(chunked.isOverBudget && core.budget.heldBytes == 12)
        let second = RequestState(route: "batch", started: .now, limit: 100, context: ())
        second.declaredLength = 12
        // A body declared small may use the reserve, a quarter of the budget (18 of 16 + 4 bytes)...
        six.withUnsafeBytes { #expect(second.receive($0, core: core) == .keep) }
        #expect(core.budget.heldBytes == 18)
        // ...and no more: its next chunk would cross it.
        six.withUnsafeBytes { #expect(second.receive($0, core: core) == .discard) }
        #expect(second.isOverBudget && second.body.isEmpty && second.charged == 0)
        // The first keeps its 12 bytes (and its charge, given back when it completes).
        #expect(first.body.count == 12 && first.charged == 12)
        #expect(core.budget.heldBytes == 12)
    }

    @Test("decompression rejects truncated and corrupt streams and respects the limit exactly")
    func decompression() throws {
        let text = Array(String(repeating: "{\"a\":1}", count: 1000).utf8)
        for encoding in [ContentEncoding.gzip, .zstd] {
            let packed = encoding == .gzip ? Compression.gzip(text) : Compression.zstd(text)
            #expect(try Decompressor.decode(packed, encoding: encoding, limit: text.count) == text)
            #expect(throws: IngestError.decompressedTooLarge(limit: text.count - 1)) {
                try Decompressor.decode(packed, encoding: encoding, limit: text.count - 1)
            }
            let truncated = Array(packed.dropLast(5))
            #expect(throws: (any Error).self) { try Decompressor.decode(truncated, encoding: encoding, limit: 1 << 20) }
            #expect(throws: (any Error).self) { try Decompressor.decode(text, encoding: encoding, limit: 1 << 20) }
        }
        #expect(try ContentEncoding(header: nil) == .identity)
        #expect(try ContentEncoding(header: " GZIP ") == .gzip)
        #expect(throws: IngestError.unsupportedEncoding("br")) { try ContentEncoding(header: "br") }
    }

    @Test(
        "the rate limiter allows the burst, then answers with a retry time, then refills; apps and key kinds apart"
    )
    func rateLimiter() {
        let limiter = RateLimiter(rate: 2, burst: 2)
        let start = ContinuousClock.now
        #expect(limiter.acquire(app: "a", kind: .publishable, now: start) == nil)
        #expect(limiter.acquire(app: "a", kind: .publishable, now: start) == nil)
        #expect(limiter.acquire(app: "a", kind: .publishable, now: start) == 1)
        #expect(limiter.acquire(app: "b", kind: .publishable, now: start) == nil)
        // The secret key's bucket (the link service, reports) is not spent by the public key's traffic.
        #expect(limiter.acquire(app: "a", kind: .secret, now: start) == nil)
        #expect(limiter.acquire(app: "a", kind: .secret, now: start) == nil)
        #expect(limiter.acquire(app: "a", kind: .secret, now: start) == 1)
        #expect(limiter.acquire(app: "a", kind: .publishable, now: start + .milliseconds(600)) == nil)
    }

    @Test("a tiny rate gives a retry time of at most a day, not a crash", arguments: [1e-20, 1e-300, 1e-3])
    func tinyRate(rate: Double) {
        let limiter = RateLimiter(rate: rate, burst: 1)
        let start = ContinuousClock.now
        #expect(limiter.acquire(app: "a", kind: .publishable, now: start) == nil)
        #expect(limiter.acquire(app: "a", kind: .publishable, now: start) == (rate == 1e-3 ? 1000 : 86_400))
    }

    @Test("bearer tokens and content types are parsed leniently but strictly JSON")
    func headers() throws {
        #expect(IngestService.bearerToken("Bearer abc") == "abc")
        #expect(IngestService.bearerToken("bearer  abc ") == "abc")
        #expect(IngestService.bearerToken("Bearer ") == nil)
        #expect(IngestService.bearerToken("Bearer  abc") == "abc")
        #expect(IngestService.bearerToken("Bearer abc\t") == "abc")
        #expect(IngestService.bearerToken("Bearer \u{301}abc") == nil)  // the blank and the accent are one character
        try IngestService.checkContentType("application/json; charset=utf-8")
        #expect(IngestService.bearerToken("Token abc") == nil)
        try IngestService.checkContentType(nil)
        try IngestService.checkContentType("application/json")
        try IngestService.checkContentType("Application/JSON; charset=UTF-8")
        #expect(throws: IngestError.self) { try IngestService.checkContentType("application/jsonx") }
        #expect(throws: IngestError.self) { try IngestService.checkContentType("application/json; charset=utf-16") }
    }
}

@Suite("Shutdown")
struct ShutdownTests {
    /// A server whose sink blocks its first append until released, and the event request stuck in
    /// that append once `startRequest` returns (its status lands in `result`).
    final class Fixture {
        static let headers = [("Authorization", "Bearer k"), ("X-App-ID", "a")]
        let slow = SlowSink()
        let keys = KeyStore(
            source: StaticKeySource([APIKeyRecord(appID: "a", kind: .publishable, key: "k")]), cacheFile: nil)
        let server: IngestServer
        let result = ResultBox()

        init() throws {
            keys.start()
            var configuration = IngestConfiguration()
            configuration.port = 0
            configuration.threads = 2
            server = try IngestServer(
                configuration: configuration, keys: keys, sink: slow, deadLetterSink: MemorySink())
        }

        func startRequest() {
            let (port, result) = (server.port, result)
            Thread {
                let response = try? RawHTTPClient(port: port).request(
                    "POST", "/api/analytics/event", headers: Self.headers, body: BadInputTests.event)
                result.set(response?.status)
            }.start()
            slow.waitUntilAppending()
        }

        /// Releases the stuck append and waits (bounded) for its answer.
        func finishRequest() -> Int? {
            slow.release()
            _ = eventually(timeout: .seconds(60), every: .milliseconds(10)) { result.get() != nil }
            return result.get()
        }

        deinit { keys.stop() }
    }

    @Test("shutdown refuses new connections at once and still finishes the requests in flight")
    func quiesce() throws {
        let fixture = try Fixture()
        let (server, port) = (fixture.server, fixture.server.port)
        fixture.startRequest()
        let stopper = Thread { server.shutdown() }
        stopper.start()
        // The shutdown has begun once the port refuses connections; the stuck request holds it there.
        var refusing = false
        for _ in 0..<6000 {  // at most 60 s, as `eventually`
            if (try? RawHTTPClient(port: port)) == nil {
                refusing = true
                break
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(refusing, "the listening socket stays open during the shutdown's grace period")
        #expect(fixture.finishRequest() == 200)
        #expect(fixture.slow.count == 1)
        server.shutdown()
        #expect((try? RawHTTPClient(port: port)) == nil)
    }

    @Test("while shutting down, /readyz and new events answer 503 shutting_down with Retry-After, /healthz 200")
    func refusesDuringShutdown() throws {
        let fixture = try Fixture()
        let server = fixture.server
        // A keep-alive connection opened before the shutdown: the daemon stops accepting new ones.
        let other = try RawHTTPClient(port: server.port)
        #expect(try other.request("GET", "/readyz").status == 200)
        // The stuck request holds the shutdown in its grace period until the sink is released.
        fixture.startRequest()
        let stopper = Thread { server.shutdown() }
        stopper.start()
        var ready = try other.request("GET", "/readyz")
        for _ in 0..<500 where ready.status == 200 {
            Thread.sleep(forTimeInterval: 0.01)
            ready = try other.request("GET", "/readyz")
        }
        #expect(ready.status == 503)
        #expect(ready.json["status"] as? String == "shutting_down")
        #expect(ready.header("Retry-After") == "1")
        let refused = try other.request(
            "POST", "/api/analytics/event", headers: Fixture.headers, body: BadInputTests.event)
        #expect(refused.status == 503)
        #expect(refused.errorCode == "shutting_down")
        #expect(refused.header("Retry-After") != nil)
        #expect(try other.request("GET", "/healthz").status == 200)
        #expect(fixture.finishRequest() == 200)
        // Only the request admitted before the shutdown reached the sink.
        #expect(fixture.slow.count == 1)
        server.shutdown()
    }
}

/// A sink whose first append blocks until released.
final class SlowSink: EventSink, @unchecked Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var records = 0

    func append(_ records: [[UInt8]]) throws {
        entered.signal()
        gate.wait()
        lock.withLock { self.records += records.count }
    }
    func waitUntilAppending() { _ = entered.wait(timeout: .now() + 60) }
    func release() { gate.signal() }
    var count: Int { lock.withLock { records } }
}

final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int??
    func set(_ status: Int?) { lock.withLock { value = .some(status) } }
    func get() -> Int? { lock.withLock { value ?? nil } }
}
