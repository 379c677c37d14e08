import Foundation
import Testing

@testable import Simulator

@Suite struct RequestTests {
    static let sendTime = SimulatedTime.parseDay("2026-11-01")! + 12 * SimulatedTime.hour
    static let world = Simulation.world(
        WorldParameters(
            appID: "app_req", links: 5, devices: 400, days: 20, start: SimulatedTime.parseDay("2026-06-01")!, seed: 9))
    static let requests = Simulation.requests(
        for: world, appID: "app_req", publishableKey: "pk_req", secretKey: "sk_req", sendTime: sendTime)

    /// Every body decompressed, once (index-aligned with `requests`).
    static let texts: [String] = requests.map { request in
        var body = request.body
        if request.headers.contains(.init(name: "Content-Encoding", value: "gzip")) { body = (try? gunzip(body)) ?? [] }
        return String(decoding: body, as: UTF8.self)
    }

    static func json(_ request: SimulatedRequest) throws -> [String: Any] {
        var body = request.body
        if request.headers.contains(.init(name: "Content-Encoding", value: "gzip")) { body = try gunzip(body) }
        return try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] ?? [:]
    }

    /// Decompresses with the system's gzip, so our encoder is checked against a real implementation.
    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID().uuidString).gz").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gzip")
        process.arguments = ["-dc", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return Array(output)
    }

    @Test("gzip bodies decompress with the system gzip to valid JSON")
    func gzipBodies() throws {
        let compressed = Self.requests.filter { $0.headers.contains(.init(name: "Content-Encoding", value: "gzip")) }
        #expect(compressed.count > 10)
        for request in compressed.prefix(8) { #expect(try !Self.json(request).isEmpty) }
    }

    @Test("a skewed device's events travel only in batches whose sent_at is read from the same skewed clock")
    func skewedDevicesUseSentAt() throws {
        let skewed = Self.world.devices.filter { $0.clockSkew != 0 }
        #expect(!skewed.isEmpty)
        for device in skewed {
            let carrying = zip(Self.requests, Self.texts).filter { $0.1.contains(device.id) }.map(\.0)
            #expect(!carrying.isEmpty)
            for request in carrying {
                #expect(request.path == "/api/analytics/batch")
                let body = try Self.json(request)
                let sentAt = try #require(body["sent_at"] as? String)
                #expect(sentAt == SimulatedTime.iso8601(Self.sendTime + device.clockSkew))
            }
        }
    }

    @Test("the link service authenticates with the secret key and SDK routes with the publishable key")
    func keysPerRoute() {
        for request in Self.requests {
            let auth = request.headers.first { $0.name == "Authorization" }?.value
            #expect(auth == (request.path == "/api/link/events" ? "Bearer sk_req" : "Bearer pk_req"))
            #expect(request.headers.contains(.init(name: "X-App-ID", value: "app_req")))
        }
    }

    @Test("every valid event, click and match is sent at least once; the expected refusals are planned")
    func everythingIsSent() {
        let sentEvents = Self.requests.filter { $0.path.hasPrefix("/api/analytics") }.reduce(0) { $0 + $1.eventCount }
        let sentLink = Self.requests.filter { $0.path == "/api/link/events" }.reduce(0) { $0 + $1.eventCount }
        #expect(sentEvents >= Self.world.events.count + Self.world.invalidEvents.count)
        #expect(sentLink >= Self.world.clicks.count + Self.world.matches.count)
        let refused = Self.requests.filter { $0.expectation == .rejected }.count
        #expect(refused == Self.world.invalidEvents.filter { !$0.inBatch }.count + 1)  // + one malformed body
    }

    @Test("Android attribution drops null members; iOS sends them as null")
    func androidDropsNulls() throws {
        var sawAndroid = false
        var sawIOSNull = false
        for request in Self.requests where request.path == "/api/analytics/event" && request.expectation == .accepted {
            let body = try Self.json(request)
            guard let attribution = body["attribution"] as? [String: Any] else { continue }
            if body["platform"] as? String == "android" {
                sawAndroid = true
                #expect(!attribution.values.contains { $0 is NSNull })
            } else if attribution.values.contains(where: { $0 is NSNull }) {
                sawIOSNull = true
            }
        }
        #expect(sawAndroid && sawIOSNull)
    }

    @Test("late sessions are delivered after all on-time SDK traffic")
    func lateEventsComeLast() throws {
        let lastPhase = Self.requests.suffix { $0.path == "/api/analytics/batch" || $0.path == "/api/link/events" }
        #expect(Self.world.events.contains { $0.isLate })
        let lateDevices = Set(Self.world.events.filter(\.isLate).map { Self.world.devices[Int($0.device)].id })
        let tail = try lastPhase.map { String(describing: try Self.json($0)) }.joined()
        #expect(lateDevices.allSatisfy { tail.contains($0) || tail.contains($0.uppercased()) })
    }
}

extension Array {
    /// The longest suffix whose elements all satisfy `predicate`.
    fileprivate func suffix(while predicate: (Element) -> Bool) -> ArraySlice<Element> {
        var start = endIndex
        while start > startIndex && predicate(self[start - 1]) { start -= 1 }
        return self[start...]
    }
}
