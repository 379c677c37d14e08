import Foundation
import Testing

@testable import Ingest

@Suite("Ingest building blocks")
struct UnitTests {
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

    @Test("the body state machine keeps bytes up to the limit, then discards, then closes")
    func bodyLimit() {
        let state = RequestState(route: "event", started: .now, limit: 10, context: ())
        let six = [UInt8](repeating: 1, count: 6)
        six.withUnsafeBytes { #expect(state.receive($0) == .keep) }
        #expect(state.body.count == 6)
        six.withUnsafeBytes { #expect(state.receive($0) == .discard) }
        #expect(state.body.isEmpty)
        #expect(state.isOverLimit)
        six.withUnsafeBytes { #expect(state.receive($0) == .close) }
        #expect(state.bytesIn == 18)
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

    @Test("the rate limiter allows the burst, then answers with a retry time, then refills")
    func rateLimiter() {
        let limiter = RateLimiter(rate: 2, burst: 2)
        let start = ContinuousClock.now
        #expect(limiter.acquire(app: "a", now: start) == nil)
        #expect(limiter.acquire(app: "a", now: start) == nil)
        #expect(limiter.acquire(app: "a", now: start) == 1)
        #expect(limiter.acquire(app: "b", now: start) == nil)
        #expect(limiter.acquire(app: "a", now: start + .milliseconds(600)) == nil)
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
    @Test("shutdown finishes in-flight requests, then refuses connections")
    func quiesce() throws {
        let slow = SlowSink()
        let keys = KeyStore(
            source: StaticKeySource([APIKeyRecord(appID: "a", kind: .publishable, key: "k")]), cacheFile: nil)
        keys.start()
        defer { keys.stop() }
        var configuration = IngestConfiguration()
        configuration.port = 0
        configuration.threads = 2
        let server = try IngestServer(
            configuration: configuration, keys: keys, sink: slow, deadLetterSink: MemorySink())
        let port = server.port
        let result = ResultBox()
        let request = Thread {
            let response = try? RawHTTPClient(port: port).request(
                "POST", "/api/analytics/event",
                headers: [("Authorization", "Bearer k"), ("X-App-ID", "a")], body: BadInputTests.event)
            result.set(response?.status)
        }
        request.start()
        slow.waitUntilAppending()
        let stopper = Thread { server.shutdown() }
        stopper.start()
        Thread.sleep(forTimeInterval: 0.2)
        slow.release()
        for _ in 0..<500 where result.get() == nil { Thread.sleep(forTimeInterval: 0.01) }
        #expect(result.get() == 200)
        #expect(slow.count == 1)
        server.shutdown()
        #expect((try? RawHTTPClient(port: port)) == nil)
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
    func waitUntilAppending() { _ = entered.wait(timeout: .now() + 10) }
    func release() { gate.signal() }
    var count: Int { lock.withLock { records } }
}

final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int??
    func set(_ status: Int?) { lock.withLock { value = .some(status) } }
    func get() -> Int? { lock.withLock { value ?? nil } }
}
