import Postgres

/// The loader's statements, one named constant each. Table and column names follow
/// `sql/001_core.sql` (raw tables and dedup tables) and `sql/020_aggregator.sql` (rollup seam).
enum LoadSQL {
    /// Session settings, before the first temporary table (temp_buffers cannot change after that):
    /// a full batch of staged rows (tens of MiB) stays in local buffers instead of spilling to temp
    /// files on every scan, and the devices CTE sorts the batch in memory. Memory per aggregator
    /// session only; durability settings are untouched (synchronous_commit stays on).
    static let sessionSettings = "SET temp_buffers = '128MB'; SET work_mem = '64MB'"

    /// Staging and touched-key tables, once per session. Temporary (never WAL-logged) and emptied at
    /// every COMMIT or ROLLBACK, so a failed cycle leaves nothing behind for the next one.
    /// Column order = `StagingEncoder.columns`.
    static let createStaging = """
        CREATE TEMP TABLE IF NOT EXISTS load_staging (
            kind text NOT NULL, app_id text NOT NULL, event_id text NOT NULL,
            time timestamptz NOT NULL, received_at timestamptz NOT NULL, clock text NOT NULL,
            name text, device_id text, platform text, sdk text, client_ts timestamptz, sent_at timestamptz,
            install_click_id text, open_click_id text, open_type text, click_id text, data text, metadata text,
            url text, path text, query text, utm_source text, utm_medium text, utm_campaign text,
            click_kind text, user_agent text, ip text, referrer text, method text, score integer
        ) ON COMMIT DELETE ROWS;
        CREATE TEMP TABLE IF NOT EXISTS load_touched (app_id text NOT NULL, day date NOT NULL) ON COMMIT DELETE ROWS;
        """ + stagingStatistics

    /// Column statistics of the staging table: the planner needs the row count and the distinct
    /// counts of the join and grouping keys, nothing about the payload columns. A target of 10 on
    /// the keys (0 elsewhere) makes ANALYZE sample 3,000 rows instead of 30,000 of every column: it
    /// took 200-330 ms per 50k batch before, a few ms after.
    static var stagingStatistics: String {
        let keys: Set = ["kind", "app_id", "event_id", "device_id", "click_id", "time"]
        let columns = StagingEncoder.columns.map { "ALTER COLUMN \($0) SET STATISTICS \(keys.contains($0) ? 10 : 0)" }
        return "\nALTER TABLE pg_temp.load_staging " + columns.joined(separator: ", ") + ";"
    }

    /// One COPY per cycle into the staging table (text format).
    static let copyStaging: SQL = SQL(
        stringLiteral: "COPY pg_temp.load_staging (\(StagingEncoder.columns.joined(separator: ", "))) FROM STDIN")

    /// Statistics for the planner after each COPY (a sample; milliseconds for a full batch).
    static let analyzeStaging = "ANALYZE pg_temp.load_staging"

    /// The load lock: a transaction-level advisory lock keyed by ('detr', hash of the schema), so
    /// aggregators of one schema exclude each other and tests in separate schemas do not.
    static let tryLock: SQL = """
        SELECT pg_try_advisory_xact_lock(1684370546, hashtext(current_schema())) AS locked
        """

    /// The load lock, waiting for it (replay and rollup rebuild).
    static let lock: SQL = """
        SELECT pg_advisory_xact_lock(1684370546, hashtext(current_schema()))::text AS locked
        """

    /// Every node's checkpoint.
    static let readCheckpoints: SQL = """
        SELECT node, segment, frame_offset, loaded_events, log_id FROM load_checkpoints
        """

    /// Moves one node's checkpoint forward (never backwards within one log; a different log id
    /// replaces the position), adding to its loaded count.
    static func advanceCheckpoint(
        node: String, segment: Int64, offset: Int64, records: Int64, newestReceivedAt: String?, logID: String?
    ) -> SQL {
        """
        INSERT INTO load_checkpoints AS c
            (node, segment, frame_offset, loaded_events, newest_received_at, log_id, updated_at)
        VALUES (\(node), \(segment)::bigint, \(offset)::bigint, \(records)::bigint, \(newestReceivedAt)::timestamptz,
                \(logID)::text, now())
        ON CONFLICT (node) DO UPDATE SET
            segment = EXCLUDED.segment, frame_offset = EXCLUDED.frame_offset,
            loaded_events = c.loaded_events + EXCLUDED.loaded_events,
            newest_received_at = GREATEST(c.newest_received_at, EXCLUDED.newest_received_at),
            log_id = coalesce(EXCLUDED.log_id, c.log_id),
            updated_at = now()
        WHERE (c.segment, c.frame_offset) < (EXCLUDED.segment, EXCLUDED.frame_offset)
           OR c.log_id IS DISTINCT FROM coalesce(EXCLUDED.log_id, c.log_id)
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

    /// Events and retention events: ids first into `event_ids` (ON CONFLICT DO NOTHING), then only the
    /// rows whose id came back into `events`; devices upserted from exactly those rows (first seen =
    /// earliest event, its platform and SDK; install click = the earliest event carrying one, so late
    /// data corrects both); touched (app, UTC day) keys recorded. Returns `inserted`.
    static var insertEvents: SQL { insertEvents(safeCasts: false) }

    /// `insertEvents` with `data`/`metadata` cast through `aggregator_try_jsonb` (sql/021): used to
    /// retry a batch whose fast cast failed, so one malformed payload cannot block loading.
    static func insertEvents(safeCasts: Bool) -> SQL {
        let data = safeCasts ? "aggregator_try_jsonb(s.data)" : "s.data::jsonb"
        let metadata = safeCasts ? "aggregator_try_jsonb(s.metadata)" : "s.metadata::jsonb"
        return SQL(stringLiteral: insertEventsTemplate.replacingOccurrences(of: "s.data::jsonb, s.metadata::jsonb", with: "\(data), \(metadata)"))
    }

    private static let insertEventsTemplate = """
        WITH fresh AS (
            INSERT INTO event_ids (app_id, event_id, event_time)
            SELECT app_id, event_id, time FROM pg_temp.load_staging WHERE kind IN ('event', 'retention')
            ON CONFLICT DO NOTHING
            RETURNING app_id, event_id
        ), ins AS (
            INSERT INTO events (app_id, event_id, kind, name, device_id, platform, sdk, event_time, received_at,
                                client_ts, sent_at, install_click_id, open_click_id, open_type, click_id, data,
                                metadata, clock)
            SELECT s.app_id, s.event_id, s.kind, s.name, s.device_id, s.platform, s.sdk, s.time, s.received_at,
                   s.client_ts, s.sent_at, s.install_click_id, s.open_click_id, s.open_type, s.click_id,
                   s.data::jsonb, s.metadata::jsonb, s.clock
            FROM pg_temp.load_staging s JOIN fresh f ON f.app_id = s.app_id AND f.event_id = s.event_id
            WHERE s.kind IN ('event', 'retention')
            RETURNING app_id, event_id, device_id, event_time, platform, sdk, install_click_id
        ), seen AS (
            SELECT DISTINCT ON (app_id, device_id) app_id, device_id, event_time, platform, sdk
            FROM ins ORDER BY app_id, device_id, event_time, event_id
        ), clicked AS (
            SELECT DISTINCT ON (app_id, device_id) app_id, device_id, install_click_id, event_time
            FROM ins WHERE install_click_id IS NOT NULL ORDER BY app_id, device_id, event_time, event_id
        ), dev AS (
            INSERT INTO devices AS d (app_id, device_id, first_seen, platform, first_sdk, install_click_id,
                                      install_click_at)
            SELECT s.app_id, s.device_id, s.event_time, s.platform, s.sdk, c.install_click_id, c.event_time
            FROM seen s LEFT JOIN clicked c ON c.app_id = s.app_id AND c.device_id = s.device_id
            -- Only new devices and real corrections reach ON CONFLICT: a conflicting row is locked
            -- (and its page written) even when the update's WHERE is false. One index probe per device
            -- of the batch, never a scan of the devices table.
            WHERE NOT EXISTS (
                SELECT 1 FROM devices x
                WHERE x.app_id = s.app_id AND x.device_id = s.device_id AND x.first_seen <= s.event_time
                  AND (c.event_time IS NULL OR (x.install_click_at IS NOT NULL AND x.install_click_at <= c.event_time)))
            ON CONFLICT (app_id, device_id) DO UPDATE SET
                first_seen = LEAST(d.first_seen, EXCLUDED.first_seen),
                platform = CASE WHEN EXCLUDED.first_seen < d.first_seen THEN EXCLUDED.platform ELSE d.platform END,
                first_sdk = CASE WHEN EXCLUDED.first_seen < d.first_seen THEN EXCLUDED.first_sdk ELSE d.first_sdk END,
                install_click_id = CASE
                    WHEN EXCLUDED.install_click_at IS NOT NULL
                         AND (d.install_click_at IS NULL OR EXCLUDED.install_click_at < d.install_click_at)
                    THEN EXCLUDED.install_click_id ELSE d.install_click_id END,
                install_click_at = CASE
                    WHEN EXCLUDED.install_click_at IS NOT NULL
                         AND (d.install_click_at IS NULL OR EXCLUDED.install_click_at < d.install_click_at)
                    THEN EXCLUDED.install_click_at ELSE d.install_click_at END
            WHERE EXCLUDED.first_seen < d.first_seen
               OR (EXCLUDED.install_click_at IS NOT NULL
                   AND (d.install_click_at IS NULL OR EXCLUDED.install_click_at < d.install_click_at))
        ), touched AS (
            INSERT INTO pg_temp.load_touched (app_id, day)
            SELECT DISTINCT app_id, (event_time AT TIME ZONE 'UTC')::date FROM ins
        )
        SELECT count(*)::bigint AS inserted FROM ins
        """

    /// Clicks: deduplicated on (app_id, click_id) through `click_ids`; links upserted from the new
    /// clicks (first seen = earliest click). Returns `inserted`.
    static let insertClicks: SQL = """
        WITH fresh AS (
            INSERT INTO click_ids (app_id, click_id, click_time)
            SELECT app_id, click_id, time FROM pg_temp.load_staging WHERE kind = 'click'
            ON CONFLICT DO NOTHING
            RETURNING app_id, click_id
        ), ins AS (
            INSERT INTO clicks (app_id, click_id, event_id, url, path, query, utm_source, utm_medium, utm_campaign,
                                platform, click_kind, click_time, received_at, user_agent, ip, referrer, clock)
            SELECT s.app_id, s.click_id, s.event_id, s.url, s.path, s.query::jsonb, s.utm_source, s.utm_medium,
                   s.utm_campaign, s.platform, s.click_kind, s.time, s.received_at, s.user_agent, s.ip, s.referrer,
                   s.clock
            FROM pg_temp.load_staging s JOIN fresh f ON f.app_id = s.app_id AND f.click_id = s.click_id
            WHERE s.kind = 'click'
            RETURNING app_id, path, click_time
        ), lnk AS (
            INSERT INTO links AS l (app_id, path, first_seen)
            SELECT app_id, path, min(click_time) FROM ins GROUP BY app_id, path
            ON CONFLICT (app_id, path) DO UPDATE SET first_seen = EXCLUDED.first_seen
            WHERE EXCLUDED.first_seen < l.first_seen
        ), touched AS (
            INSERT INTO pg_temp.load_touched (app_id, day)
            SELECT DISTINCT app_id, (click_time AT TIME ZONE 'UTC')::date FROM ins
        )
        SELECT count(*)::bigint AS inserted FROM ins
        """

    /// Matches: one per (app_id, click_id), the first loaded wins (`match_ids`). Returns `inserted`.
    static let insertMatches: SQL = """
        WITH fresh AS (
            INSERT INTO match_ids (app_id, click_id, match_time)
            SELECT app_id, click_id, time FROM pg_temp.load_staging WHERE kind = 'match'
            ON CONFLICT DO NOTHING
            RETURNING app_id, click_id
        ), ins AS (
            INSERT INTO matches (app_id, click_id, event_id, method, score, match_time, received_at, clock)
            SELECT s.app_id, s.click_id, s.event_id, s.method, s.score, s.time, s.received_at, s.clock
            FROM pg_temp.load_staging s JOIN fresh f ON f.app_id = s.app_id AND f.click_id = s.click_id
            WHERE s.kind = 'match'
            RETURNING app_id, match_time
        ), touched AS (
            INSERT INTO pg_temp.load_touched (app_id, day)
            SELECT DISTINCT app_id, (match_time AT TIME ZONE 'UTC')::date FROM ins
        )
        SELECT count(*)::bigint AS inserted FROM ins
        """

    /// The rollup seam, inside the load transaction: `queue_rollups(app_ids, days)` for the distinct
    /// touched keys (it also derives the affected keys from `pg_temp.load_staging`, which holds this
    /// cycle's rows only until COMMIT). Returns `keys`.
    static let queueRollups: SQL = """
        SELECT count(*)::bigint AS keys, queue_rollups(array_agg(app_id), array_agg(day))::text AS done
        FROM (SELECT DISTINCT app_id, day FROM pg_temp.load_touched) k
        """

    /// Applies the queued rollup work, in a transaction of its own. Returns `keys` recomputed.
    static let processRollups: SQL = "SELECT process_rollups()::bigint AS keys"

    /// Recomputes every rollup from the raw tables.
    static let rebuildRollups: SQL = "SELECT rebuild_rollups()::text AS done"
}
