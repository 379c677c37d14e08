import EventLog
import EventModel
import Foundation
import Locking
import Observability
import Postgres

/// Runs load cycles on one PostgreSQL connection. Not thread-safe: the aggregator's serial queue
/// (or one test thread) owns it.
///
/// One cycle, in ONE transaction (see docs/aggregator.md, "The cycle"):
/// 1. take the transaction-level advisory lock (another aggregator holding it: `busy`, nothing done);
/// 2. read every node's checkpoint;
/// 3. read each node's log after its checkpoint, bounded by the per-cycle budget and in pieces
///    (`NodeReadPieces`), and stream the decoded event rows through ONE `COPY events` (binary
///    format) while the rest is decoded;
/// 4. load the click and match rows and every row's dedup key (optimistically by COPY, or
///    deduplicating first after a conflict), upsert devices and links, queue the rollups of the
///    touched keys (`queue_rollups_touched`: cheap; `processRollups()` recomputes them later in a
///    transaction of its own);
/// 5. advance the checkpoints; COMMIT. Only then is the new position durable.
///
/// Partitions (docs/schema.md, "Partitions"): the days ahead are created before the transaction, in
/// a short statement of their own. A row whose day has no partition yet (a late event) lands in the
/// default partition inside the load transaction; right after COMMIT its day is created in another
/// short transaction, which moves the row into it, provided the day is inside the partition window
/// of the row's `received_at` (`PartitionWindow`): a day claimed by a wrong device clock (1970-01-01)
/// gets no partition and its rows stay in the default. So the long load transaction never attaches
/// a partition (that would lock the default partition until commit), and the partitions are bounded
/// by what the server saw happen.
final class Loader {
    /// Where a cycle starts reading.
    enum Mode {
        /// From each node's stored checkpoint; the checkpoints advance at commit.
        case checkpointed
        /// From the given positions, for the nodes given only; checkpoints are not moved.
        case replay([String: LogPosition])
    }

    /// What a committed cycle did.
    struct Report {
        /// Records read from the log.
        var records = 0
        /// Records that did not decode as envelopes (skipped, counted, logged).
        var undecodable = 0
        /// New rows per raw table (duplicates excluded).
        var inserted = RowCounts()
        /// True when a bound was hit: more is waiting.
        var backlog = false
        /// Where each node's reading ended.
        var positions: [String: LogPosition] = [:]
        /// Compressed bytes read, where a node's read stayed within one segment (for the lag estimate).
        var compressedBytesRead: Int64 = 0
        /// Compressed log bytes left after this cycle's read, per node (the lag metric).
        var bytesBehind: [String: Int64] = [:]
        /// Damaged frames the reader skipped (logged by the aggregator).
        var damaged: [FrameDamage] = []
        /// The nodes whose log could not be read (an I/O error), with the error: each node's read
        /// stopped there, what it read before is loaded and checkpointed, and the other nodes load
        /// as usual. Until 2026-12-05 one such error failed the whole cycle, every node's loads
        /// stopped (and with them retention, until a disk cap refused ingest), cycle after cycle.
        var unreadable: [String: String] = [:]
        /// The newest `received_at` among the records of this cycle.
        var newestReceivedAt: Timestamp?
        /// The nodes whose log this cycle read to its end, each with the wall-clock time its read
        /// began: everything the node had made durable by then is in this cycle or loaded before.
        var caughtUpAt: [String: Timestamp] = [:]
        /// Time spent per step of the transaction (for the benchmark and debug logs).
        var phases: [(String, Duration)] = []
        /// When the body finished and COMMIT was sent.
        var startedCommitAt: ContinuousClock.Instant?
        /// UTC days of the staged rows inside the partition window (their partitions are ensured after COMMIT).
        var days = Set<Int64>()
        /// New rows whose day is outside the partition window of their `received_at`: they stay in the
        /// default partition unless their day has a partition anyway.
        var outsidePartitionWindow = 0
        /// (app, day) keys whose rollups were queued.
        var touchedKeys = 0
    }

    /// New rows per raw table.
    struct RowCounts: Sendable, Equatable {
        var events = 0
        var clicks = 0
        var matches = 0
        var total: Int { events + clicks + matches }
    }

    let configuration: AggregatorConfiguration
    let source: LogSource
    let hooks: LoaderHooks
    let logger = Logger(label: "aggregator")
    private(set) var connection: Connection?
    /// A canceller of `connection`'s statements, for `Aggregator.stop()` on another thread (the
    /// loader itself is used on the aggregator's queue only); nil while there is no connection.
    let canceller = Locked<QueryCanceller?>(nil)
    private var partitions = PartitionCache()
    /// The last attempt to create pending day partitions failed (logged once until one succeeds).
    private var isPartitionsFailing = false
    /// Which rows' days get a partition (`partitionMaxLagDays`).
    let window: PartitionWindow
    /// The last cycle met a key loaded before: the next one deduplicates first instead of loading
    /// optimistically (until a cycle finds no duplicate).
    var dedupFirstNext = false

    init(configuration: AggregatorConfiguration, hooks: LoaderHooks = LoaderHooks()) {
        self.configuration = configuration
        self.window = PartitionWindow(maxLagDays: configuration.partitionMaxLagDays)
        self.source = LogSource(directory: configuration.segmentsDirectory)
        self.hooks = hooks
    }

    /// The open connection, or a new one with the session prepared (staging table, partitions ahead).
    func connected() throws(AggregatorError) -> Connection {
        if let connection { return connection }
        do {
            let connection = try Connection(url: configuration.databaseURL)
            try connection.unsafeSQL(LoadSQL.sessionSettings)
            try connection.unsafeSQL(LoadSQL.createStaging)
            self.connection = connection
            canceller.withLock { $0 = connection.canceller() }
            partitions.reset()
            return connection
        } catch {
            throw .database(describing: error)
        }
    }

    /// Closes the connection; the next cycle opens a new one.
    func disconnect() {
        canceller.withLock { $0 = nil }
        connection?.close()
        connection = nil
        partitions.reset()
    }

    /// Runs one cycle. Returns nil when another aggregator holds the load lock.
    /// - Parameter waitForLock: wait for the load lock instead of returning nil (replay, rebuild).
    func runCycle(mode: Mode = .checkpointed, waitForLock: Bool = false) throws(AggregatorError) -> Report? {
        let connection = try connected()
        do {
            try partitions.ensureAhead(
                connection, days: configuration.partitionsAheadDays, today: StagingBatch.day(of: .now()))
            let transaction = { (safeCasts: Bool) throws -> Report? in
                try connection.withTransaction { connection in
                    if waitForLock {
                        try connection.query(LoadSQL.lock)
                    } else if try connection.query(LoadSQL.tryLock).first?["locked", as: Bool.self] != true {
                        return nil
                    }
                    return try self.load(connection, mode: mode, safeCasts: safeCasts)
                }
            }
            let report: Report?
            do {
                report = try transaction(false)
            } catch PostgresError.server(let sqlState, let message, _, _, _) where sqlState.hasPrefix("22") {
                // A data exception (a payload jsonb refuses, e.g. a lone surrogate escape): the same
                // batch again with per-row safe casts, which keep such a payload as text.
                logger.warning("cycle.retry_safe_casts", ["sql.state": sqlState, "error": message])
                report = try transaction(true)
            }
            let committedAt = ContinuousClock.now
            guard var report else { return nil }
            if let started = report.startedCommitAt { report.phases.append(("commit", committedAt - started)) }
            if !report.days.isEmpty || !partitions.pending.isEmpty {
                do {
                    try partitions.ensure(days: report.days, connection)
                    if isPartitionsFailing {
                        isPartitionsFailing = false
                        logger.notice("partitions.recovered")
                    }
                } catch {
                    // The rows are safe in the default partition; the days stay pending and are tried
                    // again after every later cycle. One line per state change, not per attempt.
                    if !isPartitionsFailing {
                        isPartitionsFailing = true
                        logger.warning(
                            "partitions.failed", ["error": "\(error)", "days.pending": "\(partitions.pending.count)"])
                    }
                }
            }
            return report
        } catch let error as AggregatorError {
            partitions.reset()
            throw error
        } catch {
            partitions.reset()
            throw .database(describing: error)
        }
    }

    /// The body of the cycle's transaction (lock held): where each node starts, the read and the
    /// COPYs (`stageOptimistically` or `stageDedupFirst`), the derived rows and the rollup queue
    /// (`copyDerived`), then the checkpoints.
    private func load(_ connection: Connection, mode: Mode, safeCasts: Bool) throws -> Report {
        var report = Report()
        var nodes = try source.nodes()
        // A replay reads only the nodes it was given (`segments replay --node`): a node without a
        // position would otherwise be read from the start of its log.
        if case .replay(let positions) = mode { nodes = nodes.filter { positions[$0] != nil } }
        let checkpoints = try Checkpoints.read(connection)
        let logIDs = source.logIDs(nodes)
        let (starts, restarted) = startPositions(of: nodes, mode: mode, checkpoints: checkpoints, logIDs: logIDs)
        guard !nodes.isEmpty else { return report }

        // Optimistic: the raw rows go straight into their tables, the event rows streamed while the
        // log is read and decoded (PostgreSQL ingests on its core while this process decodes on
        // another), and the keys into the dedup tables with plain INSERTs, all under a savepoint. A
        // key loaded before (a replay, a client's retry across cycles) fails that INSERT; then the
        // cycle rolls back to the savepoint and deduplicates first. Safe casts and replays start
        // with deduplication (their rows are suspect or expected to be duplicates).
        let optimistic: Bool
        switch mode {
        case .checkpointed: optimistic = !safeCasts && !dedupFirstNext
        case .replay: optimistic = false
        }
        try hooks.beforeCopy?(connection)
        var phases = PhaseClock()
        func read(_ body: (LogBatch, String) throws -> Void) throws {
            try readShares(of: nodes, from: starts, into: &report, body)
        }
        let (staging, inserted) =
            optimistic
            ? try stageOptimistically(connection, read: read, phases: &phases)
            : try stageDedupFirst(connection, read: read, safeCasts: safeCasts, phases: &phases)
        if case .checkpointed = mode, !optimistic, inserted.isEverything(of: staging) { dedupFirstNext = false }
        report.undecodable = staging.undecodable
        report.newestReceivedAt = staging.newestReceivedAt
        if staging.undecodable > 0 {
            logger.warning(
                "records.undecodable", ["count": "\(staging.undecodable)", "first.error": staging.firstError ?? ""])
        }
        try hooks.afterCopy?(connection)

        if staging.rows > 0 {
            report.days = staging.days
            try copyDerived(connection, staging, inserted: inserted, into: &report, phases: &phases)
        }
        report.phases = phases.laps
        if case .checkpointed = mode {
            try Checkpoints.advance(
                connection, from: checkpoints, to: report.positions, records: staging.recordsByNode,
                newestReceivedAt: staging.newestReceivedAtByNode, caughtUpAt: report.caughtUpAt, logIDs: logIDs,
                restarted: restarted)
        }
        try hooks.beforeCommit?(connection)
        report.startedCommitAt = ContinuousClock.now
        return report
    }

    /// Applies every queued rollup (`process_rollups()`) in a transaction of its own on this
    /// loader's connection. Returns the keys recomputed, the apps whose work the pass held back
    /// (their time zone is unknown to the server: sql/079), and the time it took.
    func processRollups() throws(AggregatorError) -> (keys: Int, held: [HeldRollups], duration: Duration) {
        let connection = try connected()
        let start = ContinuousClock.now
        do {
            // The pass analyses the partitions it reads first when they are new or have doubled since
            // their last ANALYZE (sql/065), so a backlog's day is not planned as the small day it was.
            let (keys, held) = try connection.withTransaction { connection in
                let keys = try connection.query(LoadSQL.processRollups).first?["keys", as: Int.self] ?? 0
                let held = try connection.query(LoadSQL.heldRollups).map { row in
                    HeldRollups(
                        app: try row["app_id", as: String.self], timeZone: try row["time_zone", as: String.self],
                        days: try row["days", as: Int.self])
                }
                return (keys, held)
            }
            return (keys, held, ContinuousClock.now - start)
        } catch {
            throw .database(describing: error)
        }
    }
}

/// Test seams: each closure runs at its step of the cycle, inside the transaction; throwing from
/// one rolls the cycle back exactly as a crash or a lost connection at that point would.
/// Each is given the cycle's connection.
struct LoaderHooks: Sendable {
    /// After the lock and checkpoints, before the COPY.
    var beforeCopy: (@Sendable (Connection) throws -> Void)?
    /// After the COPY, before the raw inserts.
    var afterCopy: (@Sendable (Connection) throws -> Void)?
    /// After everything, just before COMMIT.
    var beforeCommit: (@Sendable (Connection) throws -> Void)?
}

extension FrameDamage {
    /// The one warning per damaged frame a cycle or a replay skipped (`segments verify` names it too).
    func log(to logger: Logger) {
        logger.warning("log.frame_damaged", ["segment.path": path, "segment.offset": "\(offset)", "reason": reason])
    }
}
