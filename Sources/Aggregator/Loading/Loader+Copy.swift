import EventLog
import Postgres

/// A cycle's COPYs: the raw rows and their dedup keys (optimistically, or deduplicating first), the
/// derived rows and the rollup queue.
extension Loader {
    /// The optimistic load: the event rows streamed through one COPY while `read` decodes the log,
    /// the rest and the dedup keys by COPY, under a savepoint. A key loaded before rolls back to
    /// the savepoint and stages again deduplicating first, now and in the next cycle (duplicates
    /// come in runs: a replay, a data directory read again).
    func stageOptimistically(
        _ connection: Connection, read: ((LogBatch, String) throws -> Void) throws -> Void,
        phases: inout PhaseClock
    ) throws -> (StagingBatch, InsertedRows) {
        try connection.unsafeSQL(LoadSQL.savepoint)
        var chunks: [(LogBatch, String)] = []
        var staging = StagingBatch(window: window, keepsEventRows: false, derivesAll: true)
        _ = try connection.copyIn(LoadSQL.copyEvents) { buffer in
            buffer.append(StagingEncoder.binaryHeader)
            try read { chunk, node in
                staging.add(chunk, node: node) { buffer.append($0) }
                chunks.append((chunk, node))
            }
            buffer.append(StagingEncoder.binaryTrailer)
        }
        phases.lap("read+copy")
        do {
            try copyRest(connection, staging, inserted: .all)
            try copy(connection, LoadSQL.copyStaging, staging.staged)  // the clicks, for sql/060
            for table in LoadSQL.Table.allCases where staging.count(table) > 0 {
                try copy(connection, LoadSQL.copyKeys[table]!, staging.keys(table), binary: true)
            }
            try connection.unsafeSQL(LoadSQL.releaseSavepoint)
            phases.lap("copy+dedup")
            return (staging, .all)
        } catch PostgresError.server(let sqlState, _, _, _, _) where sqlState == "23505" {
            try connection.unsafeSQL(LoadSQL.rollbackToSavepoint)
            phases.lap("copy+conflict")
            dedupFirstNext = true
            staging = StagingBatch(window: window)
            for (chunk, node) in chunks { staging.add(chunk, node: node) }
            // `load` is optimistic only without safe casts, so the rows go in as they were staged.
            let inserted = try dedupFirst(connection, staging, safeCasts: false)
            phases.lap("dedup+copy")
            return (staging, inserted)
        }
    }

    /// The load that deduplicates first: the whole read staged, then only the rows whose key is new.
    func stageDedupFirst(
        _ connection: Connection, read: ((LogBatch, String) throws -> Void) throws -> Void, safeCasts: Bool,
        phases: inout PhaseClock
    ) throws -> (StagingBatch, InsertedRows) {
        var staging = StagingBatch(window: window, binaryEvents: !safeCasts)
        try read { chunk, node in staging.add(chunk, node: node) }
        phases.lap("read")
        let inserted = try dedupFirst(connection, staging, safeCasts: safeCasts)
        phases.lap("dedup+copy")
        return (staging, inserted)
    }

    /// The devices, links and touched (app, day) keys of the rows `inserted`: upserted, and the
    /// touched keys' rollups queued.
    func copyDerived(
        _ connection: Connection, _ staging: StagingBatch, inserted: InsertedRows, into report: inout Report,
        phases: inout PhaseClock
    ) throws {
        let derived =
            if inserted.isEverything(of: staging), let all = staging.derivedAll { all.rows() } else {
                DerivedRows(staging, inserted: inserted)
            }
        report.inserted = derived.counts
        report.outsidePartitionWindow = derived.outsidePartitionWindow
        phases.lap("derive")
        try copy(connection, LoadSQL.copyDevices, derived.devices, binary: true)
        if !derived.devices.isEmpty { try connection.unsafeSQL(LoadSQL.upsertDevices) }
        try copy(connection, LoadSQL.copyLinks, derived.links, binary: true)
        if !derived.links.isEmpty { _ = try connection.query(LoadSQL.upsertLinks) }
        phases.lap("devices+links")
        if !derived.touched.isEmpty {
            try copy(connection, LoadSQL.copyTouched, derived.touched, binary: true)
            report.touchedKeys = try queueRollups(connection)
        }
        phases.lap("rollups")
    }

    /// Sends `rows` (whole COPY rows) through `sql`; nothing when empty. In slices, so the COPY's
    /// own buffer stays at its chunk size instead of growing to a second copy of `rows`.
    /// With `binary`, the stream gets the binary format's header and trailer around the rows.
    func copy(_ connection: Connection, _ sql: SQL, _ rows: [UInt8], binary: Bool = false) throws {
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
    func copy(
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
    func copyRest(_ connection: Connection, _ staging: StagingBatch, inserted: InsertedRows) throws {
        try copy(
            connection, LoadSQL.copyClicks, staging.clicks, facts: { staging.clickFacts[$0] }, fresh: inserted.clicks)
        try copy(
            connection, LoadSQL.copyMatches, staging.matches, facts: { staging.matchFacts[$0] }, fresh: inserted.matches
        )
    }

    /// Deduplication first: stages every row's key, inserts the keys with `ON CONFLICT DO NOTHING`,
    /// and sends only the rows whose key went in. With `safeCasts`, event rows go through the text
    /// table and `aggregator_try_jsonb`.
    func dedupFirst(_ connection: Connection, _ staging: StagingBatch, safeCasts: Bool) throws -> InsertedRows {
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
    func queueRollups(_ connection: Connection) throws -> Int {
        let result = try connection.query(LoadSQL.queueRollups)
        return try result.first?["keys", as: Int.self] ?? 0
    }
}
