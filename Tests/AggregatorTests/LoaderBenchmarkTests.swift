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
            events: events, databaseURL: url, sqlDirectory: RepositoryRoot.path + "/sql", progress: { _ in })
        print(result)
        #expect(result.events == events)
        #expect(result.loadSeconds > 0 && result.copySeconds > 0)
    }
}
