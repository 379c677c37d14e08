import EventLog
import EventModel
import Foundation
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
    private let logger = Logger(label: "aggregator")
    private(set) var connection: Connection?
    private var partitions = PartitionCache()
    /// The last attempt to create pending day partitions failed (logged once until one succeeds).
    private var isPartitionsFailing = false
    /// Which rows' days get a partition (`partitionMaxLagDays`).
    private let window: PartitionWindow
    /// The last cycle met a key loaded before: the next one deduplicates first instead of loading
    /// optimistically (until a cycle finds no duplicate).
    private var dedupFirstNext = false

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
            partitions.reset()
            return connection
        } catch {
            throw .database(describing: error)
        }
    }

    /// Closes the connection; the next cycle opens a new one.
    func disconnect() {
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

    /// The body of the cycle's transaction (lock held).
    private func load(_ connection: Connection, mode: Mode, safeCasts: Bool) throws -> Report {
        var report = Report()
        var nodes = try source.nodes()
        // A replay reads only the nodes it was given (`segments replay --node`): a node without a
        // position would otherwise be read from the start of its log.
        if case .replay(let positions) = mode { nodes = nodes.filter { positions[$0] != nil } }
        let checkpoints = try Checkpoints.read(connection)
        var starts: [String: LogPosition?] = [:]
        let logIDs = source.logIDs(nodes)
        for node in nodes {
            switch mode {
            case .checkpointed:
                if let checkpoint = checkpoints[node], Checkpoints.isAnotherLog(checkpoint, logIDs[node]) {
                    // The position belongs to another log: read this one from its start (rows
                    // already loaded are skipped by the dedup tables).
                    logger.error(
                        "checkpoint.other_log",
                        ["node": node, "checkpoint.log_id": checkpoint.logID ?? "", "log.id": logIDs[node] ?? ""])
                    starts[node] = .some(nil)
                } else {
                    starts[node] = checkpoints[node]?.position
                }
            case .replay(let positions): starts[node] = positions[node]
            }
        }
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
        var staging = StagingBatch(window: window)
        try hooks.beforeCopy?(connection)
        var clock = ContinuousClock.now
        func phase(_ name: String) {
            let now = ContinuousClock.now
            report.phases.append((name, now - clock))
            clock = now
        }
        func read(_ body: (LogBatch, String) throws -> Void) throws {
            var remainingRecords = configuration.maxEventsPerCycle
            var remainingBytes = configuration.maxBytesPerCycle
            var caughtUp = Set<String>()
            var visited = Set<String>()
            // Fair share per node; a node that needs less leaves the rest to those after it.
            for (index, node) in nodes.enumerated() where remainingRecords > 0 && remainingBytes > 0 {
                visited.insert(node)
                let share = nodes.count - index
                let startedAt = Timestamp.now()
                var records = 0
                var position = starts[node] ?? nil
                var pieces = NodeReadPieces(
                    maxRecords: max(1, remainingRecords / share), maxBytes: max(4096, remainingBytes / share))
                while let bounds = pieces.next() {
                    let chunk = try source.read(
                        node: node, after: position, maxRecords: bounds.records, maxBytes: bounds.bytes)
                    pieces.record(chunk, asked: bounds)
                    records += chunk.count
                    remainingRecords -= chunk.count
                    remainingBytes -= chunk.bytes.count
                    report.records += chunk.count
                    report.damaged += chunk.damaged
                    position = chunk.next
                    try body(chunk, node)
                }
                guard let end = position else {
                    // Nothing in this node's log yet: caught up, with no checkpoint row to record it on.
                    if source.measuredBytesBehind(node: node, after: nil) == 0 { caughtUp.insert(node) }
                    continue
                }
                // Backlog: this node's reads returned records and the log still extends past where
                // they stopped. (An empty read is never backlog, so a torn tail cannot cause a busy loop.)
                let measured = source.measuredBytesBehind(node: node, after: end)
                let behind = measured ?? 0
                report.bytesBehind[node] = behind
                if records > 0, behind > 0 { report.backlog = true }
                if measured == 0 {
                    report.caughtUpAt[node] = startedAt
                    caughtUp.insert(node)
                }
                report.positions[node] = end
                if let from = starts[node] ?? nil, from.segment == end.segment {
                    report.compressedBytesRead += end.offset - from.offset
                }
            }
            // A node the budget did not reach (a frame is read whole, so one node's share can take all
            // of it) is backlog when its log extends past its start: `aggregate --once` stopped with it
            // unread until 2026-11-30.
            for node in nodes where !visited.contains(node) {
                let behind = source.measuredBytesBehind(node: node, after: starts[node] ?? nil) ?? 1
                if behind > 0 { report.backlog = true }
            }
            // `loaded_through` (sql/063) is the earliest over the checkpoint rows, so a node this cycle
            // did not read to its end (its share of the budget ran out, its lag could not be measured)
            // and that has no row yet, or one that appeared while it read, would not hold it back:
            // caught_up_at is recorded only when every node was read to its end.
            let listedAfter = Set((try? source.nodes()) ?? nodes)
            if caughtUp != Set(nodes) || !listedAfter.isSubset(of: Set(nodes)) { report.caughtUpAt = [:] }
        }
        var inserted = InsertedRows.all
        if optimistic {
            try connection.unsafeSQL(LoadSQL.savepoint)
            var chunks: [(LogBatch, String)] = []
            staging = StagingBatch(window: window, keepsEventRows: false, derivesAll: true)
            _ = try connection.copyIn(LoadSQL.copyEvents) { buffer in
                buffer.append(StagingEncoder.binaryHeader)
                try read { chunk, node in
                    staging.add(chunk, node: node) { buffer.append($0) }
                    chunks.append((chunk, node))
                }
                buffer.append(StagingEncoder.binaryTrailer)
            }
            phase("read+copy")
            do {
                try copyRest(connection, staging, inserted: .all)
                try copy(connection, LoadSQL.copyStaging, staging.staged)  // the clicks, for sql/060
                for table in LoadSQL.Table.allCases where staging.count(table) > 0 {
                    try copy(connection, LoadSQL.copyKeys[table]!, staging.keys(table), binary: true)
                }
                try connection.unsafeSQL(LoadSQL.releaseSavepoint)
                phase("copy+dedup")
            } catch PostgresError.server(let sqlState, _, _, _, _) where sqlState == "23505" {
                // A key loaded before: undo the optimistic rows and deduplicate first, now and in the
                // next cycle (duplicates come in runs: a replay, a data directory read again).
                try connection.unsafeSQL(LoadSQL.rollbackToSavepoint)
                phase("copy+conflict")
                dedupFirstNext = true
                staging = StagingBatch(window: window)
                for (chunk, node) in chunks { staging.add(chunk, node: node) }
                inserted = try dedupFirst(connection, staging, safeCasts: safeCasts)
                phase("dedup+copy")
            }
        } else {
            staging = StagingBatch(window: window, binaryEvents: !safeCasts)
            try read { chunk, node in staging.add(chunk, node: node) }
            phase("read")
            inserted = try dedupFirst(connection, staging, safeCasts: safeCasts)
            if case .checkpointed = mode, inserted.isEverything(of: staging) { dedupFirstNext = false }
            phase("dedup+copy")
        }
        report.undecodable = staging.undecodable
        report.newestReceivedAt = staging.newestReceivedAt
        if staging.undecodable > 0 {
            logger.warning(
                "records.undecodable", ["count": "\(staging.undecodable)", "first.error": staging.firstError ?? ""])
        }
        try hooks.afterCopy?(connection)

        if staging.rows > 0 {
            report.days = staging.days
            let derived =
                if inserted.isEverything(of: staging), let all = staging.derivedAll { all.rows() } else {
                    DerivedRows(staging, inserted: inserted)
                }
            report.inserted = derived.counts
            report.outsidePartitionWindow = derived.outsidePartitionWindow
            phase("derive")
            try copy(connection, LoadSQL.copyDevices, derived.devices, binary: true)
            if !derived.devices.isEmpty { try connection.unsafeSQL(LoadSQL.upsertDevices) }
            try copy(connection, LoadSQL.copyLinks, derived.links, binary: true)
            if !derived.links.isEmpty { _ = try connection.query(LoadSQL.upsertLinks) }
            phase("devices+links")
            if !derived.touched.isEmpty {
                try copy(connection, LoadSQL.copyTouched, derived.touched, binary: true)
                report.touchedKeys = try queueRollups(connection)
            }
            phase("rollups")
        }
        if case .checkpointed = mode {
            try Checkpoints.advance(
                connection, from: checkpoints, to: report.positions, records: staging.recordsByNode,
                newestReceivedAt: staging.newestReceivedAtByNode, caughtUpAt: report.caughtUpAt, logIDs: logIDs)
        }
        try hooks.beforeCommit?(connection)
        report.startedCommitAt = ContinuousClock.now
        return report
    }

    /// Sends `rows` (whole COPY rows) through `sql`; nothing when empty. In slices, so the COPY's
    /// own buffer stays at its chunk size instead of growing to a second copy of `rows`.
    /// With `binary`, the stream gets the binary format's header and trailer around the rows.
    private func copy(_ connection: Connection, _ sql: SQL, _ rows: [UInt8], binary: Bool = false) throws {
        guard !rows.isEmpty else { return }
        _ = try connection.copyIn(sql) { buffer in
            if binary { buffer.append(StagingEncoder.binaryHeader) }
            for start in stride(from: 0, to: rows.count, by: 128 * 1024) {
                buffer.append(rows[start..<min(rows.count, start + 128 * 1024)])
            }
            if binary { buffer.append(StagingEncoder.binaryTrailer) }
        }
    }

    /// Sends the rows of `rows` whose key `fresh` holds (all when nil).
    /// With `binary`, the stream gets the binary format's header and trailer around the rows.
    private func copy(
        _ connection: Connection, _ sql: SQL, _ rows: StagingBatch.Rows, facts: (Int) -> StagingBatch.RowFacts,
        fresh: Set<StagingBatch.RowKey>?, binary: Bool = false
    ) throws {
        guard rows.count > 0, fresh.map({ !$0.isEmpty }) ?? true else { return }
        _ = try connection.copyIn(sql) { buffer in
            if binary { buffer.append(StagingEncoder.binaryHeader) }
            defer { if binary { buffer.append(StagingEncoder.binaryTrailer) } }
            if fresh == nil {
                for start in stride(from: 0, to: rows.bytes.count, by: 128 * 1024) {
                    buffer.append(rows.bytes[start..<min(rows.bytes.count, start + 128 * 1024)])
                }
                return
            }
            for index in 0..<rows.count where InsertedRows.contains(fresh, facts(index)) {
                buffer.append(rows[index])
            }
        }
    }

    /// The click and match rows of `inserted` straight into their tables.
    private func copyRest(_ connection: Connection, _ staging: StagingBatch, inserted: InsertedRows) throws {
        try copy(
            connection, LoadSQL.copyClicks, staging.clicks, facts: { staging.clickFacts[$0] }, fresh: inserted.clicks)
        try copy(
            connection, LoadSQL.copyMatches, staging.matches, facts: { staging.matchFacts[$0] }, fresh: inserted.matches
        )
    }

    /// Deduplication first: stages every row's key, inserts the keys with `ON CONFLICT DO NOTHING`,
    /// and sends only the rows whose key went in. With `safeCasts`, event rows go through the text
    /// table and `aggregator_try_jsonb`.
    private func dedupFirst(_ connection: Connection, _ staging: StagingBatch, safeCasts: Bool) throws -> InsertedRows {
        var inserted = InsertedRows()
        try copy(connection, LoadSQL.copyStaging, staging.staged)
        func fresh(_ table: LoadSQL.Table) throws -> Set<StagingBatch.RowKey> {
            guard staging.count(table) > 0 else { return [] }
            var keys = Set<StagingBatch.RowKey>()
            for row in try connection.query(LoadSQL.freshKeys[table]!) {
                keys.insert(
                    StagingBatch.RowKey(app: try row["app_id", as: String.self], id: try row["id", as: String.self]))
            }
            return keys
        }
        inserted.events = try fresh(.events)
        inserted.clicks = try fresh(.clicks)
        inserted.matches = try fresh(.matches)
        try copy(
            connection, staging.binaryEvents ? LoadSQL.copyEvents : LoadSQL.copyEventRows, staging.events,
            facts: { staging.eventFacts[$0].key }, fresh: inserted.events, binary: staging.binaryEvents)
        if safeCasts, inserted.events?.isEmpty == false { _ = try connection.query(LoadSQL.insertEventRowsSafely) }
        try copyRest(connection, staging, inserted: inserted)
        return inserted
    }

    /// Queues the rollups of the rows this cycle inserted (inside the load transaction, while the
    /// temporary tables still hold the cycle's derived rows; sql/060).
    private func queueRollups(_ connection: Connection) throws -> Int {
        let result = try connection.query(LoadSQL.queueRollups)
        return try result.first?["keys", as: Int.self] ?? 0
    }

    /// Applies every queued rollup (`process_rollups()`) in a transaction of its own on this
    /// loader's connection. Returns the keys recomputed and the time it took.
    func processRollups() throws(AggregatorError) -> (keys: Int, duration: Duration) {
        let connection = try connected()
        let start = ContinuousClock.now
        do {
            // The pass analyses the partitions it reads first when they are new or have doubled since
            // their last ANALYZE (sql/065), so a backlog's day is not planned as the small day it was.
            let keys = try connection.withTransaction { connection in
                try connection.query(LoadSQL.processRollups).first?["keys", as: Int.self] ?? 0
            }
            return (keys, ContinuousClock.now - start)
        } catch {
            throw .database(describing: error)
        }
    }
}

/// One node's share of a cycle's read, taken in pieces of at most `pieceRecords` records, so the
/// first rows reach the streamed COPY after one piece is decompressed instead of the whole share
/// (the server waited for the whole read before: about 35 ms of each 50,000-record cycle).
/// The log reader returns whole frames, at least one (even one larger than asked): a piece is only
/// asked for while the rest of the share holds the largest frame seen, so a node reads at most one
/// frame less than its share, never more than one frame over it (as a single read could).
struct NodeReadPieces {
    /// Records per piece.
    static let pieceRecords = 4096
    private var records: Int
    private var bytes: Int
    private var largestFrameRecords = 0
    private var largestFrameBytes = 0
    private var done = false
    private var first = true

    init(maxRecords: Int, maxBytes: Int) {
        records = maxRecords
        bytes = maxBytes
    }

    /// The bounds of the next piece, or nil when the share is read (or the log's end reached).
    mutating func next() -> (records: Int, bytes: Int)? {
        guard !done, records > 0, bytes > 0 else { return nil }
        if !first, records < largestFrameRecords || bytes < largestFrameBytes { return nil }
        first = false
        return (min(records, Self.pieceRecords), bytes)
    }

    /// Accounts for a piece read with `asked` bounds.
    mutating func record(_ chunk: LogBatch, asked: (records: Int, bytes: Int)) {
        records -= chunk.count
        bytes -= chunk.bytes.count
        if chunk.frames > 0 {
            largestFrameRecords = max(largestFrameRecords, (chunk.count + chunk.frames - 1) / chunk.frames)
            largestFrameBytes = max(largestFrameBytes, (chunk.bytes.count + chunk.frames - 1) / chunk.frames)
        }
        // Nothing read (the end, a torn tail, only damaged frames), or a piece bounded by the share
        // itself that came back short (the next frame does not fit, or the end): the share is read.
        if chunk.isEmpty || (asked.records == records + chunk.count && chunk.count < asked.records) {
            done = true
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
