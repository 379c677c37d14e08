import EventLog
import Foundation
import Ingest
import Testing

/// Not a test: with `DETOUR_INGEST_SERVE_SECONDS=N` it runs a real ingest server (real event log,
/// fsync durability) on `DETOUR_INGEST_PORT` (default 18080) for N seconds so `wrk` can measure it
/// from outside (see docs/ingest.md, "Measuring"). Skipped otherwise. Uses only `package` API so it
/// also builds with `-c release`.
@Suite("Serve for an external benchmark")
struct ServeForBenchmark {
    static let seconds = Int(ProcessInfo.processInfo.environment["DETOUR_INGEST_SERVE_SECONDS"] ?? "") ?? 0

    struct Keys: KeySource {
        func loadKeys() throws -> [APIKeyRecord] {
            [APIKeyRecord(appID: "app_bench", kind: .publishable, key: "pk_bench")]
        }
    }

    @Test("serve until the time is up", .enabled(if: seconds > 0))
    func serve() throws {
        let directory = NSTemporaryDirectory() + "ingest-bench-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try LogWriter(configuration: LogConfiguration(directory: directory + "/segments"))
        let deadLetters = try LogWriter(configuration: LogConfiguration(directory: directory + "/deadletter"))
        let keys = KeyStore(source: Keys(), cacheFile: nil)
        keys.start()
        var configuration = IngestConfiguration()
        configuration.port = UInt16(ProcessInfo.processInfo.environment["DETOUR_INGEST_PORT"] ?? "") ?? 18080
        if let threads = Int(ProcessInfo.processInfo.environment["DETOUR_INGEST_THREADS"] ?? "") {
            configuration.threads = threads
        }
        let server = try IngestServer(configuration: configuration, keys: keys, sink: log, deadLetterSink: deadLetters)
        Thread.sleep(forTimeInterval: Double(Self.seconds))
        server.shutdown()
        log.close()
        deadLetters.close()
        keys.stop()
        let reader = try LogReader(directory: directory + "/segments", node: "node-1")
        var position: LogPosition?
        var total = 0
        for _ in 0..<100_000 {
            let batch = try reader.read(after: position, maxRecords: 100_000, maxBytes: 64 << 20)
            if batch.isEmpty { break }
            total += batch.count
            position = batch.next
        }
        print("ingest bench: \(total) events durable in the log")
    }
}
