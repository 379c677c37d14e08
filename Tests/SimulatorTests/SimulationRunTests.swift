import Testing

@testable import Simulator

@Suite struct SimulationRunTests {
    static func configuration(port: UInt16, deadline: Duration = .seconds(60), retries: Int = 5)
        -> SimulationConfiguration
    {
        SimulationConfiguration(
            target: "http://127.0.0.1:\(port)", appID: "app_run", publishableKey: "pk_run", secretKey: "sk_run",
            links: 3,
            devices: 60, days: 10, start: SimulatedTime.parseDay("2026-06-01")!, seed: 3, concurrency: 4,
            deadline: deadline, ioTimeoutSeconds: 10, maxRetries: retries)
    }

    static func expected(_ configuration: SimulationConfiguration) -> [SimulatedRequest] {
        Simulation.requests(
            for: Simulation.world(configuration.worldParameters), appID: "app_run", publishableKey: "pk_run",
            secretKey: "sk_run")
    }

    @Test("run sends every planned request and flags the 2xx answers to requests that must be refused")
    func sendsEverything() throws {
        let server = try TinyHTTPServer()
        defer { server.stop() }
        let configuration = Self.configuration(port: server.port)
        let summary = try Simulation.run(configuration)
        let expected = Self.expected(configuration)
        #expect(summary.requests == expected.count)
        #expect(server.requests.count == expected.count)
        #expect(summary.statuses == [200: expected.count])
        #expect(summary.transportErrors == 0 && summary.notSent == 0)
        #expect(summary.unexpected == expected.filter { $0.expectation == .rejected }.count)
        #expect(!summary.isSuccess)
        // Same requests as the offline encoding, apart from batch sent_at (read from the clock when sent).
        let sentPaths = server.requests.map(\.path).sorted()
        #expect(sentPaths == expected.map(\.path).sorted())
        let unbatched = Set(expected.filter { $0.path != "/api/analytics/batch" }.map(\.body))
        #expect(unbatched.isSubset(of: Set(server.requests.map(\.body))))
        // One keep-alive connection per worker and phase.
        #expect(Set(server.requests.map(\.connection)).count <= 4 * 3)
    }

    @Test("a server answering 503 makes every accepted request an unexpected answer, not a crash")
    func unavailableServer() throws {
        let server = try TinyHTTPServer { _, _ in .init(status: 503, body: "{\"error\":\"unavailable\"}") }
        defer { server.stop() }
        let configuration = Self.configuration(port: server.port, retries: 0)
        let summary = try Simulation.run(configuration)
        let expected = Self.expected(configuration)
        #expect(summary.unexpected == expected.filter { $0.expectation == .accepted }.count)
        #expect(summary.problems.count == 20)
        #expect(summary.retries == 0)
    }

    @Test("429 and 503 answers are sent again after Retry-After, and only the final answer counts")
    func retriesBackpressure() throws {
        // Every connection's first answer is 503 (then 429 on its third): the client must come back.
        let server = try TinyHTTPServer { _, index in
            index == 0 ? .init(status: 503, retryAfter: 0) : index == 2 ? .init(status: 429, retryAfter: 0) : .init()
        }
        defer { server.stop() }
        let configuration = Self.configuration(port: server.port)
        let summary = try Simulation.run(configuration)
        let expected = Self.expected(configuration)
        #expect(summary.requests == expected.count)
        #expect(summary.statuses == [200: expected.count])
        #expect(summary.retries >= 2 && summary.retries == server.requests.count - expected.count)
        #expect(summary.unexpected == expected.filter { $0.expectation == .rejected }.count)
    }

    @Test("past the deadline nothing more is sent and the summary says so")
    func deadline() throws {
        let server = try TinyHTTPServer()
        defer { server.stop() }
        let summary = try Simulation.run(Self.configuration(port: server.port, deadline: .zero))
        #expect(summary.requests == 0)
        #expect(summary.notSent == Self.expected(Self.configuration(port: server.port)).count)
    }

    @Test("a period that has not ended yet, or an unreachable target, is refused before anything is sent")
    func refusals() throws {
        var future = Self.configuration(port: 1)
        future.start = LoadRunner.wallClockMilliseconds()
        #expect(throws: SimulationError.self) { try Simulation.run(future) }
        let server = try TinyHTTPServer()
        let port = server.port
        server.stop()
        #expect(throws: SimulationError.io(call: "connect", errno: 111)) {
            try Simulation.run(Self.configuration(port: port))
        }
    }
}
