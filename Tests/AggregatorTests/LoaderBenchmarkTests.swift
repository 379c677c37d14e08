import EventModel
import Foundation
import TestSupport
import Testing

@testable import Aggregator

@Suite struct LoaderBenchmarkTests {
    /// Runs the benchmark end to end on a small input (no timing asserted: figures come from the
    /// benchmark run with DETOUR_BENCH_EVENTS set, e.g. 200000, in a release build).
    @Test("the loader benchmark loads every generated envelope and reports both throughputs")
    func smoke() throws {
        guard let url = ProcessInfo.processInfo.environment["DETOUR_TEST_DATABASE_URL"] else {
            throw TestDatabaseError.notConfigured
        }
        let events = Int(ProcessInfo.processInfo.environment["DETOUR_BENCH_EVENTS"] ?? "") ?? 3_000
        let result = try LoaderBenchmark.run(
            events: events, databaseURL: url,
            sqlDirectory: ProcessInfo.processInfo.environment["DETOUR_BENCH_SQL_DIR"] ?? RepositoryRoot.path + "/sql",
            progress: { print($0) })
        print(result)
        #expect(result.events == events)
        #expect(result.loadSeconds > 0 && result.copySeconds > 0)
    }
}

@Suite struct EncodeCostTests {
    /// The client-side share of a cycle: decoding envelopes and encoding COPY rows, no database.
    @Test("decoding and COPY-encoding generated envelopes round-trips every one")
    func decodeEncode() throws {
        let count = Int(ProcessInfo.processInfo.environment["DETOUR_BENCH_EVENTS"] ?? "") ?? 2_000
        var world = BenchmarkWorld(seed: 7)
        let lines = (0..<count).map { world.envelope($0).encoded() }
        let start = ContinuousClock.now
        var row: [UInt8] = []
        var bytes = 0
        for line in lines {
            let envelope = try Envelope(decoding: line)
            row.removeAll(keepingCapacity: true)
            StagingEncoder.append(envelope, to: &row)
            bytes += row.count
        }
        let seconds = (ContinuousClock.now - start).seconds
        print("decode+encode: \(count) envelopes in \(String(format: "%.3f", seconds)) s = \(Int(Double(count) / seconds)) per s, \(bytes) COPY bytes")
        #expect(bytes > count * 50)
    }
}
