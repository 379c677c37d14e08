import EventLog
import Foundation
import Postgres

/// Issue 5's scaling figure: a load cycle of `cycleEvents` new events should cost about the same
/// whatever the number of events already loaded (within 1.5x). Loads `preload` envelopes through
/// the aggregator into a fresh schema, then times `cycles` cycles of `cycleEvents` new envelopes
/// each: the load transaction (`runOnce`) and, separately, the rollup pass that follows it
/// (`rollupInterval` zero for the timed cycles). Run it for two preload sizes in the same
/// process and compare (see docs/aggregator.md, "Performance").
package enum CycleScalingBenchmark {
    /// The figures of one preload size.
    package struct Result: Sendable, CustomStringConvertible {
        /// Events loaded before the timed cycles.
        package var preloaded: Int
        /// Seconds the preload took (all cycles, rollups included).
        package var preloadSeconds: Double
        /// Envelopes per timed cycle.
        package var cycleEvents: Int
        /// Per timed cycle: seconds of the load transaction (runOnce minus its rollup pass).
        package var loadSeconds: [Double]
        /// Per timed cycle: seconds of the rollup pass that followed it.
        package var rollupSeconds: [Double]

        /// The median of a list of seconds.
        static func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        }

        /// Median load-transaction seconds of the timed cycles.
        package var medianLoadSeconds: Double { Self.median(loadSeconds) }
        /// Median rollup-pass seconds of the timed cycles.
        package var medianRollupSeconds: Double { Self.median(rollupSeconds) }

        package var description: String {
            String(
                format: "preloaded %d events in %.1f s; %d-event cycle: load median %.3f s [%@], rollup pass median %.3f s [%@]",
                preloaded, preloadSeconds, cycleEvents, medianLoadSeconds,
                loadSeconds.map { String(format: "%.3f", $0) }.joined(separator: " "), medianRollupSeconds,
                rollupSeconds.map { String(format: "%.3f", $0) }.joined(separator: " "))
        }
    }

    /// Runs one preload size in a fresh schema of `databaseURL` (dropped afterwards).
    /// - Parameters:
    ///   - preload: events loaded before timing.
    ///   - cycleEvents: envelopes per timed cycle (default 10,000).
    ///   - cycles: timed cycles (default 3; the median is reported).
    ///   - databaseURL: a database the caller may create schemas in.
    ///   - sqlDirectory: the migrations to apply.
    ///   - progress: one line per phase.
    /// - Throws: errors of the log or the database.
    package static func run(
        preload: Int, cycleEvents: Int = 10_000, cycles: Int = 3, databaseURL: String, sqlDirectory: String,
        progress: (String) -> Void = { print($0) }
    ) throws -> Result {
        let suffix = String(UInt64.random(in: 0..<UInt64.max), radix: 16)
        let work = NSTemporaryDirectory() + "/cycle-bench-" + suffix
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let schema = "bench_cycle_" + suffix
        let admin = try Connection(url: databaseURL)
        defer {
            _ = try? admin.execute("drop schema if exists \(identifier: schema) cascade")
            admin.close()
        }
        try admin.execute("create schema \(identifier: schema)")
        let url = LoaderBenchmark.withSearchPath(databaseURL, schema: schema)
        let setup = try Connection(url: url)
        try Migrator(directory: sqlDirectory).migrate(setup)
        setup.close()

        var logConfiguration = LogConfiguration(directory: work + "/segments", node: "node-1")
        logConfiguration.durability = .interval(.milliseconds(50))
        var world = BenchmarkWorld(seed: 99)
        var written = 0
        func write(_ count: Int) throws {
            let writer = try LogWriter(configuration: logConfiguration)
            defer { writer.close() }
            var left = count
            while left > 0 {
                let n = min(1000, left)
                try writer.append((written..<written + n).map { world.envelope($0).encoded() })
                written += n
                left -= n
            }
        }

        var configuration = AggregatorConfiguration(databaseURL: url, dataDirectory: work)
        configuration.retainLoadedSegmentsFor = nil
        configuration.maxEventsPerCycle = 50_000
        progress("cycle bench: preloading \(preload) events")
        try write(preload)
        let preloader = try Aggregator(configuration: configuration, registry: .init(), retention: nil)
        let preloadStart = ContinuousClock.now
        _ = try preloader.runUntilCaughtUp()
        let preloadSeconds = (ContinuousClock.now - preloadStart).seconds
        preloader.stop()
        let vacuum = try Connection(url: url)
        try vacuum.execute("vacuum analyze")
        vacuum.close()

        configuration.maxEventsPerCycle = cycleEvents
        configuration.rollupInterval = .zero  // a pass after every timed cycle, timed apart from it
        let aggregator = try Aggregator(configuration: configuration, registry: .init(), retention: nil)
        defer { aggregator.stop() }
        try aggregator.processRollups()  // connection opened, queue empty: not part of the timing
        var loads: [Double] = []
        var rollups: [Double] = []
        for index in 0..<max(1, cycles) {
            try write(cycleEvents)
            let start = ContinuousClock.now
            let summary = try aggregator.runOnce()
            let total = (ContinuousClock.now - start).seconds
            let rollup = summary.rollupDuration?.seconds ?? 0
            loads.append(total - rollup)
            rollups.append(rollup)
            progress(String(format: "cycle bench: cycle %d: %d rows, load %.3f s, rollups %.3f s", index + 1, summary.rows, total - rollup, rollup))
        }
        return Result(
            preloaded: preload, preloadSeconds: preloadSeconds, cycleEvents: cycleEvents, loadSeconds: loads,
            rollupSeconds: rollups)
    }
}
