import EventModel
import Foundation
import TestSupport
import Testing

@testable import Aggregator

@Suite struct LoaderBenchmarkTests {
    /// Runs the benchmark end to end on a small input (no timing asserted: figures come from the
    /// benchmark run with DETOUR_BENCH_EVENTS set, e.g. 200000, in a release build).
    @Test(
        "the loader benchmark loads every generated envelope and reports both throughputs, in either order",
        arguments: [false, true])
    func smoke(copyFirst: Bool) throws {
        guard let url = ProcessInfo.processInfo.environment["DETOUR_TEST_DATABASE_URL"] else {
            throw TestDatabaseError.notConfigured
        }
        let events = Int(ProcessInfo.processInfo.environment["DETOUR_BENCH_EVENTS"] ?? "") ?? 3_000
        let result = try LoaderBenchmark.run(
            events: events, databaseURL: url,
            sqlDirectory: ProcessInfo.processInfo.environment["DETOUR_BENCH_SQL_DIR"] ?? RepositoryRoot.path + "/sql",
            maxEventsPerCycle: Int(ProcessInfo.processInfo.environment["DETOUR_BENCH_MAX_CYCLE_EVENTS"] ?? ""),
            copyFirst: copyFirst, progress: { print($0) })
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
            StagingEncoder.appendEvent(envelope, to: &row)
            bytes += row.count
        }
        let seconds = (ContinuousClock.now - start).seconds
        print(
            "decode+encode: \(count) envelopes in \(String(format: "%.3f", seconds)) s = \(Int(Double(count) / seconds)) per s, \(bytes) COPY bytes"
        )
        #expect(bytes > count * 50)
    }
}

@Suite struct CycleScalingBenchmarkTests {
    /// Runs the cycle-scaling benchmark for each preload size (no timing asserted: the figures come
    /// from a release run with DETOUR_BENCH_PRELOADS=1000000,10000000, DETOUR_BENCH_CYCLE_EVENTS=10000
    /// and DETOUR_BENCH_DIRECT_PRELOAD=1, the preload generated in PostgreSQL; event times as a live
    /// cycle sees them, or DETOUR_BENCH_CYCLE_TIMES=spread for uniform over two days).
    @Test("the cycle-scaling benchmark times cycles of new events after each preload size")
    func smoke() throws {
        guard let url = ProcessInfo.processInfo.environment["DETOUR_TEST_DATABASE_URL"] else {
            throw TestDatabaseError.notConfigured
        }
        let environment = ProcessInfo.processInfo.environment
        let preloads = (environment["DETOUR_BENCH_PRELOADS"] ?? "600,1800").split(separator: ",").compactMap { Int($0) }
        let cycleEvents = Int(environment["DETOUR_BENCH_CYCLE_EVENTS"] ?? "") ?? 300
        let sqlDirectory = environment["DETOUR_BENCH_SQL_DIR"] ?? RepositoryRoot.path + "/sql"
        var results: [CycleScalingBenchmark.Result] = []
        for preload in preloads.prefix(4) {
            let result = try CycleScalingBenchmark.run(
                preload: preload, cycleEvents: cycleEvents, cycles: Int(environment["DETOUR_BENCH_CYCLES"] ?? "") ?? 3,
                databaseURL: url, sqlDirectory: sqlDirectory, direct: environment["DETOUR_BENCH_DIRECT_PRELOAD"] == "1",
                keptSchema: environment["DETOUR_BENCH_KEEP_SCHEMA_PREFIX"].map { "\($0)_\(preload)" },
                rollupPasses: environment["DETOUR_BENCH_ROLLUP_PASSES"] != "0",
                times: environment["DETOUR_BENCH_CYCLE_TIMES"] == "spread" ? .spread : .live,
                progress: { print($0) })
            print(result)
            results.append(result)
            #expect(result.loadSeconds.count >= 1)
        }
        if let first = results.first, let last = results.last, first.medianLoadSeconds > 0 {
            print(
                String(
                    format:
                        "cycle scaling: %d vs %d preloaded: load %.2fx, rollup pass %.2fx (target load within 1.5x)",
                    last.preloaded, first.preloaded, last.medianLoadSeconds / first.medianLoadSeconds,
                    first.medianRollupSeconds > 0 ? last.medianRollupSeconds / first.medianRollupSeconds : 0))
        }
    }
}
