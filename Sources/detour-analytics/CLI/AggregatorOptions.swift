import Aggregator
import EventLog

/// Flags of the aggregator, shared by `run` and `aggregate`.
enum AggregatorOptions {
    static let help = """
        Aggregator:
          --load-interval DUR     time between load cycles when no backlog remains (default 2s)
          --rollup-interval DUR   longest time between rollup passes while new rows keep arriving
                                  (default 10s; at once when a cycle finds nothing new; 0: every cycle)
          --max-cycle-events N    most events loaded per transaction (default 50000)
          --partition-max-lag-days N
                                  a row's day gets its own partition only if at most N days before the
                                  day it was received (default 92, 0...3660); older days (wrong device
                                  clocks) stay in the default partition
          --retention DUR         delete segments loaded and older than this (default 7d; 0 keeps all)
        """

    /// Parses the aggregator flags into a validated configuration.
    static func parse(_ arguments: inout Arguments, databaseURL: String, dataDirectory: String) throws
        -> AggregatorConfiguration
    {
        var configuration = AggregatorConfiguration(databaseURL: databaseURL, dataDirectory: dataDirectory)
        if let text = try arguments.option("--load-interval") {
            configuration.loadInterval = try parseDuration(text, flag: "--load-interval")
        }
        if let text = try arguments.option("--rollup-interval") {
            configuration.rollupInterval = try parseDuration(text, flag: "--rollup-interval")
        }
        configuration.maxEventsPerCycle = try arguments.integer(
            "--max-cycle-events", default: configuration.maxEventsPerCycle, in: 1...10_000_000)
        configuration.partitionMaxLagDays = try partitionMaxLagDays(
            &arguments, default: configuration.partitionMaxLagDays)
        if let text = try arguments.option("--retention") {
            let age = try parseDuration(text, flag: "--retention")
            configuration.retainLoadedSegmentsFor = age == .zero ? nil : age
        }
        do {
            try configuration.validate()
        } catch {
            // Name the flag, not the configuration field ("loadInterval must be at least 10 ms").
            guard case .invalidConfiguration(let field, let reason) = error, let flag = flags[field] else {
                throw UsageError(description: error.description)
            }
            throw UsageError(description: "\(flag) \(reason)")
        }
        return configuration
    }

    /// The flags that set `AggregatorConfiguration` fields.
    private static let flags = [
        "loadInterval": "--load-interval", "rollupInterval": "--rollup-interval",
        "maxEventsPerCycle": "--max-cycle-events", "partitionMaxLagDays": "--partition-max-lag-days",
    ]

    /// `--partition-max-lag-days N` (also taken by `segments replay`, so a replay can use the window
    /// the aggregator used and create the same partitions).
    static func partitionMaxLagDays(_ arguments: inout Arguments, default fallback: Int) throws -> Int {
        try arguments.integer(
            "--partition-max-lag-days", default: fallback, in: AggregatorConfiguration.partitionMaxLagDaysRange)
    }

    /// The event log's retention, handed to the aggregator so it runs after successful cycles.
    static func retention(segmentsDirectory: String) -> Aggregator.RetentionHook {
        { node, loadedThrough, olderThan in
            try LogRetention.deleteLoaded(
                directory: segmentsDirectory, node: node, loadedThrough: loadedThrough, olderThan: olderThan)
        }
    }
}
