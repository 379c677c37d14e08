import Foundation

/// Everything the aggregator can be told, with its defaults and units; parsed and validated once at
/// start-up by the CLI, never read from the environment here.
package struct AggregatorConfiguration: Sendable {
    /// PostgreSQL connection URL (`postgres://user@host:port/db`). No default: the CLI requires it.
    package var databaseURL: String

    /// The data directory; segments are discovered under `<dataDirectory>/segments/<node>/`.
    package var dataDirectory: String

    /// Time between the end of one load cycle and the start of the next when no backlog remains.
    /// Default 2 s. When a cycle hit a batch bound the next one starts at once.
    package var loadInterval: Duration = .seconds(2)

    /// Rollups are processed (`process_rollups()`, a transaction of its own after a cycle) at most
    /// this long after the last pass while cycles keep bringing new rows, and at once after a cycle
    /// that found nothing new. Default 10 s: reports lag the raw rows by about this at most. Zero
    /// means after every cycle that loaded something (rollups current one transaction after it).
    package var rollupInterval: Duration = .seconds(10)

    /// At most this many envelopes per cycle, over all nodes. Default 50,000.
    package var maxEventsPerCycle: Int = 50_000

    /// At most this many envelope bytes (uncompressed) per cycle, over all nodes. Default 64 MiB.
    package var maxBytesPerCycle: Int = 64 * 1024 * 1024

    /// First retry delay after a failed cycle. Default 0.5 s; doubles per consecutive failure.
    package var backoffBase: Duration = .milliseconds(500)

    /// Upper bound of the retry delay. Default 30 s.
    package var backoffCap: Duration = .seconds(30)

    /// Day partitions kept ready ahead of today (UTC). Default 3 days.
    package var partitionsAheadDays: Int = 3

    /// A row's UTC day gets a partition of its own only when it lies within
    /// `[day(received_at) - partitionMaxLagDays, day(received_at) + 1]`; rows of other days (wrong
    /// device clocks: 1970-01-01, 2000-01-01) stay in the default partition. Default 92 days (a
    /// quarter: far beyond any queueing or recent backfill, far short of a reset clock); range
    /// `partitionMaxLagDaysRange` (0...3660: ten years, `ensure_day_partitions`' own bound per call).
    /// There is no "no limit": that would bring back a partition per wrong clock.
    package var partitionMaxLagDays: Int = 92

    /// The values `partitionMaxLagDays` accepts.
    package static let partitionMaxLagDaysRange = 0...3660

    /// Segments that are loaded and older than this are deleted after a successful cycle
    /// (when the event log offers retention). Default 7 days; nil keeps every segment.
    package var retainLoadedSegmentsFor: Duration? = .seconds(7 * 86_400)

    /// Minimum time between two retention passes. Default 60 s.
    package var retentionCheckInterval: Duration = .seconds(60)

    /// Creates a configuration with the documented defaults.
    /// - Parameters:
    ///   - databaseURL: libpq connection URL.
    ///   - dataDirectory: the pipeline's data directory (holds `segments/`).
    package init(databaseURL: String, dataDirectory: String) {
        self.databaseURL = databaseURL
        self.dataDirectory = dataDirectory
    }

    /// The directory holding one sub-directory of segments per ingest node.
    package var segmentsDirectory: String { (dataDirectory as NSString).appendingPathComponent("segments") }

    /// Checks every limit; throws `AggregatorError.invalidConfiguration` naming the first bad field.
    package func validate() throws(AggregatorError) {
        func fail(_ field: String, _ reason: String) -> AggregatorError {
            .invalidConfiguration(field: field, reason: reason)
        }
        if databaseURL.isEmpty { throw fail("databaseURL", "must not be empty") }
        if dataDirectory.isEmpty { throw fail("dataDirectory", "must not be empty") }
        if loadInterval < .milliseconds(10) { throw fail("loadInterval", "must be at least 10 ms") }
        if rollupInterval < .zero { throw fail("rollupInterval", "must not be negative") }
        if maxEventsPerCycle < 1 { throw fail("maxEventsPerCycle", "must be positive") }
        if maxBytesPerCycle < 4096 { throw fail("maxBytesPerCycle", "must be at least 4096") }
        if backoffBase <= .zero { throw fail("backoffBase", "must be positive") }
        if backoffCap < backoffBase { throw fail("backoffCap", "must be at least backoffBase") }
        if partitionsAheadDays < 0 || partitionsAheadDays > 366 { throw fail("partitionsAheadDays", "must be 0...366") }
        let lagRange = Self.partitionMaxLagDaysRange
        if !lagRange.contains(partitionMaxLagDays) {
            throw fail("partitionMaxLagDays", "must be \(lagRange.lowerBound)...\(lagRange.upperBound)")
        }
    }
}
