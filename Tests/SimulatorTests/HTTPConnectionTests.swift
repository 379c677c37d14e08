import Testing

@testable import Simulator

@Suite struct HTTPConnectionTests {
    static func request(_ body: String, path: String = "/api/analytics/event") -> SimulatedRequest {
        SimulatedRequest(
            path: path, headers: [.init(name: "Content-Type", value: "application/json")], body: Array(body.utf8),
            eventCount: 1, expectation: .accepted)
    }

    @Test("many requests share one keep-alive connection and arrive intact")
    func keepAlive() throws {
        let server = try TinyHTTPServer { request, _ in .init(status: 200, body: "{\"n\":\(request.body.count)}") }
        defer { server.stop() }
        let target = try TargetAddress(url: "http://127.0.0.1:\(server.port)")
        let connection = try HTTPConnection(to: target, timeoutSeconds: 10)
        for number in 0..<50 {
            let body = "{\"event_name\":\"e\(number)\"}"
            let response = try connection.exchange(Self.request(body).serialized(host: target.hostHeader))
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == "{\"n\":\(body.utf8.count)}")
        }
        let received = server.requests
        #expect(received.count == 50)
        #expect(Set(received.map(\.connection)).count == 1)
        #expect(received.last.map { String(decoding: $0.body, as: UTF8.self) } == "{\"event_name\":\"e49\"}")
        #expect(received.first?.headers["host"] == "127.0.0.1:\(server.port)")
    }

    @Test("a chunked answer is read whole and the connection stays usable")
    func chunked() throws {
        let server = try TinyHTTPServer { _, _ in
            .init(status: 207, body: "{\"accepted\":3,\"rejected\":1}", chunked: true)
        }
        defer { server.stop() }
        let target = try TargetAddress(url: "http://localhost:\(server.port)/ignored/prefix")
        let connection = try HTTPConnection(to: target, timeoutSeconds: 10)
        for _ in 0..<3 {
            let response = try connection.exchange(Self.request("{}").serialized(host: target.hostHeader))
            #expect(response.status == 207)
            #expect(String(decoding: response.body, as: UTF8.self) == "{\"accepted\":3,\"rejected\":1}")
        }
        #expect(connection.isReusable)
    }

    @Test("Connection: close marks the connection spent, and a closed socket reads as connectionClosed")
    func serverCloses() throws {
        let server = try TinyHTTPServer { _, index in .init(status: 200, close: index == 1) }
        defer { server.stop() }
        let target = try TargetAddress(url: "http://127.0.0.1:\(server.port)")
        let connection = try HTTPConnection(to: target, timeoutSeconds: 10)
        let bytes = Self.request("{}").serialized(host: target.hostHeader)
        #expect(try connection.exchange(bytes).status == 200)
        #expect(connection.isReusable)
        #expect(try connection.exchange(bytes).status == 200)
        #expect(!connection.isReusable)
        #expect(throws: SimulationError.self) { try connection.exchange(bytes) }
    }

    @Test("a target that is not http://host:port is refused with a clear error")
    func badTargets() {
        #expect(throws: SimulationError.invalidTarget("https://example.com")) {
            try TargetAddress(url: "https://example.com")
        }
        #expect(throws: SimulationError.invalidTarget("http://127.0.0.1:notaport")) {
            try TargetAddress(url: "http://127.0.0.1:notaport")
        }
    }

    @Test("the token bucket makes the second caller wait for the first caller's events")
    func tokenBucketPaces() {
        // The clock is given, so the figures are exact (a wall-clock bound here could fail on a
        // stalled thread until 2026-12-05).
        let start = ContinuousClock.now
        let bucket = TokenBucket(rate: 100, burst: .zero, start: start)
        #expect(bucket.reserve(10, now: start) == .zero)  // 10 events at 100/s occupy the next 100 ms
        #expect(bucket.reserve(1, now: start) == .milliseconds(100))
        #expect(bucket.reserve(1, now: start + .milliseconds(30)) == .milliseconds(80))
        // Idle past its slots, a bucket without burst does not save them up.
        #expect(bucket.reserve(1, now: start + .seconds(1)) == .zero)
        #expect(bucket.reserve(1, now: start + .seconds(1)) == .milliseconds(10))
    }
}
