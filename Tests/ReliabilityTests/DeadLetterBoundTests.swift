import Foundation
import TestSupport
import Testing

/// Dead letters are never loaded, so nothing else deletes them: a client posting bad bodies with
/// the publishable key every app ships must not be able to fill the disk through them.
@Suite(.serialized)
struct DeadLetterBoundTests {
    /// Bytes of every dead-letter segment file of the node.
    static func deadLetterBytes(_ data: String) -> Int {
        let directory = data + "/deadletter/node-1"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size]) as? Int
            return total + (size ?? 0)
        }
    }

    /// The series `series` (name and labels, as /metrics prints them) from /metrics; 0 when absent.
    static func metric(_ series: String, port: Int) -> Int {
        RawHTTP.metrics(port: port)?[series].map { Int($0) } ?? 0
    }

    /// `ingest_dead_letter_failures_total` from /metrics.
    static func deadLetterFailures(port: Int) -> Int { metric("ingest_dead_letter_failures_total", port: port) }

    /// Records the dead-letter log has written, from /metrics.
    static func deadLettersWritten(port: Int) -> Int {
        metric(#"eventlog_records_total{log="deadletter",node="node-1"}"#, port: port)
    }

    @Test("a flood of bad bodies keeps the dead letters under their cap; the oldest are pruned and new ones kept again")
    func floodStaysUnderTheCap() throws {
        let cap = 1 << 20
        let fixture = try HostileInputTests.Fixture(extraArguments: [
            "--segment-bytes", "64KiB", "--dead-letter-max-disk", "1MiB", "--dead-letter-retention", "0",
        ])
        let port = fixture.pipeline.port
        // Not JSON and not compressible (kept as base64 of the received bytes): ~40 KB per dead letter.
        var generator = SystemRandomNumberGenerator()
        func badBody() -> [UInt8] { (0..<30_000).map { _ in UInt8.random(in: 0x21...0x7e, using: &generator) } }
        var statuses: [Int: Int] = [:]
        var largest = 0
        for index in 0..<120 {
            let answer = RawHTTP.post(
                port: port, "/api/analytics/batch", key: fixture.app.publishable, app: fixture.app.id, body: badBody())
            statuses[answer?.status ?? 0, default: 0] += 1
            largest = max(largest, Self.deadLetterBytes(fixture.data.path))
            if index % 20 == 19 { #expect(fixture.normalRequest() == 200, "normal traffic during the flood") }
        }
        // Every bad body is refused as such, whether or not its dead letter fitted.
        #expect(statuses == [400: 120])
        #expect(largest <= cap, "dead letters reached \(largest) bytes, over the \(cap)-byte cap")
        #expect(Self.deadLetterFailures(port: port) > 0, "120 x 40 KB cannot all fit in 1 MiB")

        // The pruning pass (every 10 s) deletes the oldest down to half the cap.
        let deadline = ContinuousClock.now + .seconds(40)
        while Self.deadLetterBytes(fixture.data.path) > cap / 2, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.5)
        }
        #expect(Self.deadLetterBytes(fixture.data.path) <= cap / 2)
        // The log sees the freed space within about 2 s: after a failed write it fails appends fast
        // for `retryAfter` (1 s), and it re-measures the disk at most once a second. On a slow
        // machine (the suite under ThreadSanitizer) the flood can end just before a pruning pass,
        // so bad bodies are posted until one's dead letter is written again (bounded).
        var written = Self.deadLettersWritten(port: port)
        for _ in 0..<40 {
            _ = RawHTTP.post(
                port: port, "/api/analytics/batch", key: fixture.app.publishable, app: fixture.app.id, body: badBody())
            let now = Self.deadLettersWritten(port: port)
            if now > written { break }
            written = now
            Thread.sleep(forTimeInterval: 0.25)
        }
        // Room again: new dead letters are written, none fails. (Counted, not measured on disk: the
        // next pruning pass may delete older segments meanwhile, which is what it is for.)
        let failures = Self.deadLetterFailures(port: port)
        written = Self.deadLettersWritten(port: port)
        #expect(written > 0)
        for _ in 0..<3 {
            let answer = RawHTTP.post(
                port: port, "/api/analytics/batch", key: fixture.app.publishable, app: fixture.app.id, body: badBody())
            #expect(answer?.status == 400)
        }
        #expect(Self.deadLetterFailures(port: port) == failures)
        #expect(Self.deadLettersWritten(port: port) == written + 3)
        #expect(fixture.normalRequest() == 200)
    }
}
