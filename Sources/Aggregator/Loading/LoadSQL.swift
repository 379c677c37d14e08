import Postgres

/// The loader's statements, one named constant each. Table and column names follow
/// `sql/001_core.sql` (raw tables and dedup tables) and `sql/020_aggregator.sql` (rollup seam).
enum LoadSQL {
    /// Session settings, before the first temporary table (temp_buffers cannot change after that):
    /// a full batch of staged rows (tens of MiB) stays in local buffers instead of spilling to temp
    /// files on every scan, and the devices CTE sorts the batch in memory. Memory per aggregator
    /// session only; durability settings are untouched (synchronous_commit stays on).
    static let sessionSettings = "SET temp_buffers = '128MB'; SET work_mem = '64MB'"

    /// The session's temporary tables, once per session. Temporary (never WAL-logged) and emptied at
    /// every COMMIT or ROLLBACK, so a failed cycle leaves nothing behind for the next one.
    /// - `load_staging`: every row of the cycle (duplicates of earlier cycles included), only the
    ///   columns deduplication and the rollup queue read (`StagingEncoder.stagedColumns`; sql/051's
    ///   `queue_rollups` reads kind, app_id, device_id, click_id, time).
    /// - `load_event_rows`: `events` rows with `data`/`metadata` as text, for the safe-cast fallback.
    /// - `load_devices`, `load_links`, `load_touched`: the derived rows the cycle computed from its
    ///   batch (`DerivedRows`), one per device, link and (app, UTC day); `load_touched` also holds
    ///   each day's earliest and latest row time and latest event time (sql/060's contract).
    static let createStaging = """
        CREATE TEMP TABLE IF NOT EXISTS load_staging (
            kind text NOT NULL, app_id text NOT NULL, event_id text NOT NULL, time timestamptz NOT NULL,
            device_id text, click_id text
        ) ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE IF NOT EXISTS load_event_rows (
            app_id text NOT NULL, event_id text NOT NULL, kind text NOT NULL, name text NOT NULL, device_id text NOT NULL,
            platform text, sdk text, event_time timestamptz NOT NULL, received_at timestamptz NOT NULL,
            client_ts timestamptz, sent_at timestamptz, install_click_id text, open_click_id text, open_type text,
            click_id text, data text, metadata text, clock text NOT NULL
        ) ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE IF NOT EXISTS load_devices (
            app_id text NOT NULL, device_id text NOT NULL, first_seen timestamptz NOT NULL, platform text, first_sdk text,
            install_click_id text, install_click_at timestamptz
        ) ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE IF NOT EXISTS load_links (app_id text NOT NULL, path text NOT NULL, first_seen timestamptz NOT NULL)
            ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE IF NOT EXISTS load_touched (
            app_id text NOT NULL, day date NOT NULL, first_at timestamptz NOT NULL, last_at timestamptz NOT NULL,
            last_event_at timestamptz
        ) ON COMMIT DELETE ROWS;
        """

    /// `COPY <table> (<columns>) FROM STDIN` (text format unless `binary`).
    private static func copy(_ table: String, _ columns: [String], binary: Bool = false) -> SQL {
        let format = binary ? " (FORMAT binary)" : ""
        return SQL(stringLiteral: "COPY \(table) (\(columns.joined(separator: ", "))) FROM STDIN\(format)")
    }

    /// Event rows straight into the partitioned `events` table, in binary format
    /// (`StagingEncoder.appendEventBinary`; the stream starts with `binaryHeader`).
    static let copyEvents = copy("events", StagingEncoder.eventColumns, binary: true)
    /// Event rows into the text table of the safe-cast fallback.
    static let copyEventRows = copy("pg_temp.load_event_rows", StagingEncoder.eventColumns)
    /// Click rows straight into `clicks`.
    static let copyClicks = copy("clicks", StagingEncoder.clickColumns)
    /// Match rows straight into `matches`.
    static let copyMatches = copy("matches", StagingEncoder.matchColumns)
    /// Rows of the cycle into the slim staging table (all, or the optimistic load's clicks).
    static let copyStaging = copy("pg_temp.load_staging", StagingEncoder.stagedColumns)
    /// Derived device rows (binary format: `StagingEncoder.appendRowBinary`, like the two below).
    static let copyDevices = copy(
        "pg_temp.load_devices",
        ["app_id", "device_id", "first_seen", "platform", "first_sdk", "install_click_id", "install_click_at"],
        binary: true)
    /// Derived link rows.
    static let copyLinks = copy("pg_temp.load_links", ["app_id", "path", "first_seen"], binary: true)
    /// Touched (app, UTC day) keys.
    static let copyTouched = copy(
        "pg_temp.load_touched", ["app_id", "day", "first_at", "last_at", "last_event_at"], binary: true)

    /// The optimistic load's savepoint: set before the raw rows go in, released once their keys went
    /// into the dedup tables without a conflict, rolled back to on a conflict.
    static let savepoint = "SAVEPOINT load_optimistic"
    static let releaseSavepoint = "RELEASE SAVEPOINT load_optimistic"
    static let rollbackToSavepoint = "ROLLBACK TO SAVEPOINT load_optimistic"

    /// The optimistic dedup: every key of one dedup table copied straight into it (binary format,
    /// `StagingBatch.keys`): no `ON CONFLICT`, no staging table in between. A key loaded before
    /// fails the COPY with a unique violation (23505), and the cycle rolls back to the savepoint and
    /// deduplicates first (`freshKeys`).
    static let copyKeys: [Table: SQL] = Dictionary(
        uniqueKeysWithValues: Table.allCases.map { table in
            (table, SQL(stringLiteral: "COPY \(table.dedupTable) FROM STDIN (FORMAT binary)"))
        })

    /// Deduplication first: the staged keys of one dedup table inserted with `ON CONFLICT DO NOTHING`;
    /// returns the keys that went in (`app_id`, `id`): only those rows are then sent.
    static let freshKeys: [Table: SQL] = Dictionary(
        uniqueKeysWithValues: Table.allCases.map { table in
            (
                table,
                SQL(
                    stringLiteral: "INSERT INTO \(table.dedupTable) \(table.keySelect) ON CONFLICT DO NOTHING "
                        + "RETURNING app_id, \(table.idColumn) AS id")
            )
        })

    /// A raw table and its dedup table (sql/001_core.sql).
    enum Table: CaseIterable {
        case events, clicks, matches

        var dedupTable: String {
            switch self {
            case .events: "event_ids (app_id, event_id, event_time)"
            case .clicks: "click_ids (app_id, click_id, click_time)"
            case .matches: "match_ids (app_id, click_id, match_time)"
            }
        }

        var idColumn: String { self == .events ? "event_id" : "click_id" }

        /// The staged keys of this table, as the dedup table's columns.
        var keySelect: String {
            let kinds =
                switch self {
                case .events: "('event', 'retention')"
                case .clicks: "('click')"
                case .matches: "('match')"
                }
            return "SELECT app_id, \(idColumn), time FROM pg_temp.load_staging WHERE kind IN \(kinds)"
        }
    }

    /// The safe-cast fallback: the staged event rows into `events`, `data`/`metadata` cast through
    /// `aggregator_try_jsonb` (sql/021), so one payload jsonb refuses neither blocks loading nor is lost.
    static let insertEventRowsSafely: SQL = SQL(
        stringLiteral: "INSERT INTO events (\(StagingEncoder.eventColumns.joined(separator: ", "))) SELECT "
            + StagingEncoder.eventColumns.map {
                $0 == "data" || $0 == "metadata" ? "aggregator_try_jsonb(\($0))" : $0
            }.joined(separator: ", ") + " FROM pg_temp.load_event_rows")

    /// Devices from the cycle's new events, one candidate row per device (`DerivedRows`): first
    /// seen = earliest event, its platform and SDK; install click = the earliest event carrying one,
    /// so late data corrects both and a newer event never overwrites them. Two statements in one
    /// round trip: the corrections of known devices as a plain `UPDATE ... FROM` (only rows that
    /// change are written), then the new devices as a plain `INSERT` behind an anti-join. Until
    /// 2026-11-30 one `INSERT ... ON CONFLICT DO UPDATE` behind a `NOT EXISTS` probe did both; its
    /// conflict path locks each corrected row (a WAL record of its own) before updating it, and every
    /// new row pays for speculative insertion (psql, 19,800 candidates against 18,000 devices, 10,000
    /// corrections: 126-176 ms against 70-86 ms for these two). No `ON CONFLICT` is needed: `devices`
    /// is written only by load cycles and replays, under the load lock, and `load_devices` holds one
    /// row per device.
    static let upsertDevices = """
        UPDATE devices AS d SET
            first_seen = LEAST(d.first_seen, s.first_seen),
            platform = CASE WHEN s.first_seen < d.first_seen THEN s.platform ELSE d.platform END,
            first_sdk = CASE WHEN s.first_seen < d.first_seen THEN s.first_sdk ELSE d.first_sdk END,
            install_click_id = CASE
                WHEN s.install_click_at IS NOT NULL
                     AND (d.install_click_at IS NULL OR s.install_click_at < d.install_click_at)
                THEN s.install_click_id ELSE d.install_click_id END,
            install_click_at = CASE
                WHEN s.install_click_at IS NOT NULL
                     AND (d.install_click_at IS NULL OR s.install_click_at < d.install_click_at)
                THEN s.install_click_at ELSE d.install_click_at END
        FROM pg_temp.load_devices s
        WHERE d.app_id = s.app_id AND d.device_id = s.device_id
          AND (s.first_seen < d.first_seen
               OR (s.install_click_at IS NOT NULL
                   AND (d.install_click_at IS NULL OR s.install_click_at < d.install_click_at)));
        INSERT INTO devices (app_id, device_id, first_seen, platform, first_sdk, install_click_id, install_click_at)
        SELECT s.app_id, s.device_id, s.first_seen, s.platform, s.first_sdk, s.install_click_id, s.install_click_at
        FROM pg_temp.load_devices s
        WHERE NOT EXISTS (SELECT 1 FROM devices x WHERE x.app_id = s.app_id AND x.device_id = s.device_id)
        """

    /// Links from the cycle's new clicks, one row per (app, path) with its earliest click.
    static let upsertLinks: SQL = """
        INSERT INTO links AS l (app_id, path, first_seen)
        SELECT app_id, path, first_seen FROM pg_temp.load_links
        ON CONFLICT (app_id, path) DO UPDATE SET first_seen = EXCLUDED.first_seen
        WHERE EXCLUDED.first_seen < l.first_seen
        """

    /// The load lock: a transaction-level advisory lock keyed by ('detr', hash of the schema), so
    /// aggregators of one schema exclude each other and tests in separate schemas do not.
    static let tryLock: SQL = """
        SELECT pg_try_advisory_xact_lock(1684370546, hashtext(current_schema())) AS locked
        """

    /// The load lock, waiting for it (replay and rollup rebuild).
    static let lock: SQL = """
        SELECT pg_advisory_xact_lock(1684370546, hashtext(current_schema()))::text AS locked
        """

    /// An ISO time (or NULL) as a `timestamptz` no later than the database's `now()`, NULL staying
    /// NULL (`least(NULL, now())` would be `now()`).
    private static func notAfterNow(_ time: String?) -> SQL {
        "(CASE WHEN \(time)::timestamptz > now() THEN now() ELSE \(time)::timestamptz END)"
    }

    /// Every node's checkpoint.
    static let readCheckpoints: SQL = """
        SELECT node, segment, frame_offset, loaded_events, log_id FROM load_checkpoints
        """

    /// Moves one node's checkpoint forward (never backwards within one log, unless `moveBack`: the
    /// node was read from its start because the checkpoint lay past its log's end; a different log
    /// id replaces the position), adding to its loaded count.
    /// `caughtUpAt`: when this cycle began reading the node, if it read the log to its end (sql/063).
    /// Both times are stored at most at the database's `now()`: they say how far the day is loaded
    /// (`loaded_through`), and one ahead of the clock (an ingest or aggregator host whose clock
    /// stepped forward for a while) would otherwise stay, as the column only grows, and make every
    /// later day "completely loaded" as soon as it ended, however far behind the loads were (until
    /// 2026-12-05).
    static func advanceCheckpoint(
        node: String, segment: Int64, offset: Int64, records: Int64, newestReceivedAt: String?, caughtUpAt: String?,
        logID: String?, moveBack: Bool = false
    ) -> SQL {
        """
        INSERT INTO load_checkpoints AS c
            (node, segment, frame_offset, loaded_events, newest_received_at, caught_up_at, log_id, updated_at)
        VALUES (\(node), \(segment)::bigint, \(offset)::bigint, \(records)::bigint, \(fragment: notAfterNow(newestReceivedAt)),
                \(fragment: notAfterNow(caughtUpAt)), \(logID)::text, now())
        ON CONFLICT (node) DO UPDATE SET
            segment = EXCLUDED.segment, frame_offset = EXCLUDED.frame_offset,
            loaded_events = c.loaded_events + EXCLUDED.loaded_events,
            newest_received_at = GREATEST(c.newest_received_at, EXCLUDED.newest_received_at),
            caught_up_at = GREATEST(c.caught_up_at, EXCLUDED.caught_up_at),
            log_id = coalesce(EXCLUDED.log_id, c.log_id),
            updated_at = now()
        WHERE (c.segment, c.frame_offset) < (EXCLUDED.segment, EXCLUDED.frame_offset)
           OR c.log_id IS DISTINCT FROM coalesce(EXCLUDED.log_id, c.log_id) OR \(moveBack)::boolean
        """
    }

    /// A cycle that did not move the node's checkpoint read its log to its end (nothing new):
    /// everything the node had made durable when the read began is loaded (sql/063). At most the
    /// database's `now()`, as in `advanceCheckpoint`.
    static func caughtUp(node: String, at time: String) -> SQL {
        """
        UPDATE load_checkpoints SET caught_up_at = \(fragment: notAfterNow(time))
        WHERE node = \(node) AND (caught_up_at IS NULL OR caught_up_at < \(fragment: notAfterNow(time)))
        """
    }

    /// Creates the day partitions of every raw table for `[from, to]` (UTC days, ISO text).
    static func ensurePartitions(from: String, to: String) -> SQL {
        """
        SELECT ensure_day_partitions('events'::regclass, \(from)::date, \(to)::date)
             + ensure_day_partitions('clicks'::regclass, \(from)::date, \(to)::date)
             + ensure_day_partitions('matches'::regclass, \(from)::date, \(to)::date) AS created
        """
    }

    /// The rollup queue, inside the load transaction: `queue_rollups_touched()` (sql/060) queues the
    /// work of the cycle from `load_touched`, `load_devices` and the staged clicks (temporary tables
    /// that hold this cycle's rows only until COMMIT). Returns `keys`, the (app, UTC day) keys queued.
    static let queueRollups: SQL = "SELECT queue_rollups_touched() AS keys"

    /// Applies the queued rollup work, in a transaction of its own. Returns `keys` recomputed.
    static let processRollups: SQL = "SELECT process_rollups()::bigint AS keys"

    /// The apps whose queued rollups a pass holds back because the server does not know their time
    /// zone (sql/079), with the days queued for each.
    static let heldRollups: SQL = "SELECT app_id, time_zone, days FROM rollup_held_apps()"

    /// Recomputes every rollup from the raw tables.
    static let rebuildRollups: SQL = "SELECT rebuild_rollups()::text AS done"
}
