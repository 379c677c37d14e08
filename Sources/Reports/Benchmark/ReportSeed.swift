import Foundation
package import Postgres

/// Puts a realistic synthetic history straight into the raw tables, set-based (`generate_series`),
/// for the report benchmarks: loading 10M events through the aggregator takes over an hour here,
/// this takes minutes. The rows respect the real schema (daily partitions created by
/// `ensure_day_partitions`, the dedup tables, `devices`, `links`, a load checkpoint for the
/// watermark); the rollups are then derived by `rebuild_rollups()` like any backfill.
///
/// Shape (about 22 raw rows per device): devices install over `days` days (more towards the end),
/// 55% iOS, 42% Android, 3% web; half are attributed to a web click minutes before their install
/// (1,000 links, skewed: a few links get most clicks; 4 UTM variants per link, one without UTM)
/// and matched by the link service; two more web clicks per device never install. Each device has
/// 1 + a geometric number of sessions (the install session, then returns 1-20 days later); a
/// session is an `app_open` retention event then 2-6 actions (view_item, search, add_to_cart,
/// ..., sign_up for 40% of devices, purchase with revenue in USD/EUR/GBP for 15%, some refunds);
/// 4% of return sessions open through a universal-link click (re-engagements, last-touch opens).
/// Deterministic for a given size (`setseed`, no parallel workers).
package enum ReportSeed {
    /// What was inserted.
    package struct Counts: Sendable {
        /// Rows in `events`.
        package var events: Int
        /// Rows in `clicks`.
        package var clicks: Int
        /// Rows in `matches`.
        package var matches: Int
        /// Simulated devices.
        package var devices: Int
        /// Raw rows in all (events + clicks + matches): the "events" of the benchmark sizes.
        package var total: Int { events + clicks + matches }
    }

    /// Raw rows generated per device, measured (used to size the device count from a row target).
    package static let rowsPerDevice = 22.4

    /// Inserts about `rows` raw rows (events + clicks + matches) for `app` (which must exist) over
    /// the `days` days before `end` (exclusive), with `links` links, on `connection` (whose
    /// search_path names the schema). Takes about 1 minute per million rows here.
    ///
    /// - Throws: `ReportError.database`.
    package static func populate(
        connection: Connection, app: String, rows: Int, links: Int, days: Int, end: ReportDay,
        progress: (String) -> Void = { _ in }
    ) throws(ReportError) -> Counts {
        let devices = max(10, Int((Double(rows) / rowsPerDevice).rounded()))
        do {
            try connection.unsafeSQL("SET max_parallel_workers_per_gather = 0")
            try connection.unsafeSQL(
                "CREATE TEMP TABLE seed_params (app text, devices int, links int, days int, end_at timestamptz, start_at timestamptz)"
            )
            try connection.execute(
                """
                INSERT INTO seed_params
                SELECT \(app), \(devices), \(links), \(days), \(end.iso8601)::date::timestamp AT TIME ZONE 'UTC',
                       (\(end.iso8601)::date - \(days)::int)::timestamp AT TIME ZONE 'UTC'
                """)
            _ = try connection.query("SELECT setseed(0.42)")
            for (index, statement) in statements.enumerated() {
                let started = ContinuousClock.now
                try connection.unsafeSQL(statement)
                let elapsed = ContinuousClock.now - started
                progress("seed step \(index + 1)/\(statements.count): \(elapsed)")
            }
            for table in ["events", "clicks", "matches"] {
                try connection.unsafeSQL("ANALYZE " + table)
            }
            let counted = try connection.query(
                """
                SELECT (SELECT count(*) FROM events WHERE app_id = \(app)) AS events,
                       (SELECT count(*) FROM clicks WHERE app_id = \(app)) AS clicks,
                       (SELECT count(*) FROM matches WHERE app_id = \(app)) AS matches
                """)[0]
            try connection.unsafeSQL(
                "DROP TABLE IF EXISTS seed_params, seed_devices, seed_sessions; RESET max_parallel_workers_per_gather")
            return Counts(
                events: try counted["events", as: Int.self], clicks: try counted["clicks", as: Int.self],
                matches: try counted["matches", as: Int.self], devices: devices)
        } catch {
            throw .database(message: "\(error)")
        }
    }

    /// The generating statements; they read their parameters from the temporary table `seed_params`.
    static let statements: [String] = [
        """
        SELECT ensure_day_partitions(t::regclass, (SELECT (start_at AT TIME ZONE 'UTC')::date - 1 FROM seed_params),
                                     (SELECT (end_at AT TIME ZONE 'UTC')::date + 1 FROM seed_params))
        FROM unnest(ARRAY['events', 'clicks', 'matches']) t
        """,
        """
        -- devices: install time (more installs towards the end), platform, link of their install click
        CREATE TEMP TABLE seed_devices AS
        SELECT n, 'd' || n AS device_id,
               CASE WHEN r1 < 0.55 THEN 'ios' WHEN r1 < 0.97 THEN 'android' ELSE 'web' END AS platform,
               p.start_at + (p.end_at - p.start_at) * sqrt(r2) AS install_at,
               r3 < 0.5 AS attributed,
               CASE WHEN r3 < 0.5 THEN 1 + floor(p.links * r4 * r4)::int END AS link,
               floor(r5 * 4)::int AS variant,
               r3 < 0.5 OR r6 < 0.6 AS has_object,
               1 + floor(-ln(1 - r7) * 4)::int AS sessions,
               CASE WHEN r8 < 0.4 THEN floor(r8 * 5)::int END AS signup_session,
               CASE WHEN r8 < 0.15 THEN 1 + floor(r9 * 3)::int END AS purchase_session,
               (ARRAY['USD', 'EUR', 'GBP'])[1 + floor(r9 * r9 * 3)::int] AS currency
        FROM seed_params p,
             LATERAL (SELECT g AS n, random() r1, random() r2, random() r3, random() r4, random() r5, random() r6,
                             random() r7, random() r8, random() r9 FROM generate_series(1, p.devices) g) x
        """,
        """
        ALTER TABLE seed_devices ADD PRIMARY KEY (n)
        """,
        """
        -- sessions: the install session, then returns on later days (closer days more likely); 4% open
        -- through a universal link on a random link (re-engagement / last-touch opens)
        CREATE TEMP TABLE seed_sessions AS
        SELECT d.n, s.s, CASE WHEN s.s = 0 THEN d.install_at
                              ELSE d.install_at + make_interval(days => 1 + floor(-ln(1 - random()) * 6)::int)
                                   + (random() - 0.5) * interval '10 hours' END AS start_at,
               CASE WHEN s.s > 0 AND random() < 0.04 THEN 1 + floor(p.links * random() * random())::int END AS ul_link,
               2 + floor(random() * 5)::int AS actions
        FROM seed_devices d CROSS JOIN seed_params p CROSS JOIN LATERAL generate_series(0, d.sessions - 1) s(s)
        """,
        """
        DELETE FROM seed_sessions s USING seed_params p WHERE s.start_at >= p.end_at - interval '1 hour'
        """,
        """
        ALTER TABLE seed_sessions ADD COLUMN id bigserial
        """,
        """
        -- clicks: the install click of each attributed device (web, minutes before the install), web clicks
        -- that never install (2 per device), and the universal-link opens of sessions
        INSERT INTO clicks (app_id, click_id, event_id, url, path, query, utm_source, utm_medium, utm_campaign, platform,
                            click_kind, click_time, received_at, clock)
        SELECT p.app, c.click_id, 'ce-' || c.click_id, 'https://go.example.com/l/' || c.link, '/l/' || c.link, NULL,
               (ARRAY['news', 'social', 'email', NULL])[1 + c.variant], (ARRAY['cpc', 'organic', 'newsletter', NULL])[1 + c.variant],
               CASE WHEN c.variant < 3 THEN 'camp-' || (c.link % 20) END, c.platform, c.kind, c.at, c.at + interval '2 seconds', 'ok'
        FROM seed_params p, (
            SELECT 'w' || d.n AS click_id, d.link, d.variant, d.platform, 'web' AS kind,
                   d.install_at - random() * interval '2 hours' - interval '1 minute' AS at
            FROM seed_devices d WHERE d.attributed
            UNION ALL
            SELECT 'x' || g, 1 + floor(p2.links * random() * random())::int, floor(random() * 4)::int,
                   CASE WHEN random() < 0.5 THEN 'ios' ELSE 'android' END, 'web',
                   p2.start_at + (p2.end_at - p2.start_at) * sqrt(random())
            FROM seed_params p2, generate_series(1, p2.devices * 2) g
            UNION ALL
            SELECT 'u' || s.id, s.ul_link, floor(random() * 4)::int, d.platform, 'universal_link', s.start_at
            FROM seed_sessions s JOIN seed_devices d ON d.n = s.n WHERE s.ul_link IS NOT NULL
        ) c
        WHERE c.at >= p.start_at
        ORDER BY c.at
        """,
        """
        INSERT INTO click_ids (app_id, click_id, click_time)
        SELECT app_id, click_id, click_time FROM clicks WHERE app_id = (SELECT app FROM seed_params) ORDER BY 1, 2
        """,
        """
        -- matches: the link service matched each attributed install to its click (a second after the first open)
        INSERT INTO matches (app_id, click_id, event_id, method, score, match_time, received_at, clock)
        SELECT p.app, 'w' || d.n, 'me-' || d.n, CASE WHEN d.n % 3 = 0 THEN 'probabilistic' ELSE 'deterministic' END,
               CASE WHEN d.n % 3 = 0 THEN 80 END, d.install_at + interval '1 second', d.install_at + interval '3 seconds', 'ok'
        FROM seed_devices d, seed_params p
        WHERE d.attributed AND EXISTS (SELECT 1 FROM click_ids c WHERE c.app_id = p.app AND c.click_id = 'w' || d.n)
        ORDER BY d.install_at
        """,
        """
        INSERT INTO match_ids (app_id, click_id, match_time)
        SELECT app_id, click_id, match_time FROM matches WHERE app_id = (SELECT app FROM seed_params) ORDER BY 1, 2
        """,
        """
        -- events: per session an app_open (retention) then its actions, a few seconds apart
        INSERT INTO events (app_id, event_id, kind, name, device_id, platform, sdk, event_time, received_at, client_ts, sent_at,
                            install_click_id, open_click_id, open_type, click_id, data, metadata, clock)
        SELECT p.app, 'e' || s.id || '-' || a.i, CASE WHEN a.i = 0 THEN 'retention' ELSE 'event' END, a.name, d.device_id,
               d.platform, 'seed/1.0', a.at, a.at + interval '5 seconds', a.at, a.at + interval '1 second',
               CASE WHEN d.attributed THEN 'w' || d.n END,
               CASE WHEN s.ul_link IS NOT NULL THEN 'u' || s.id WHEN s.s = 0 AND d.attributed THEN 'w' || d.n END,
               CASE WHEN s.ul_link IS NOT NULL THEN 'verified' WHEN s.s = 0 AND d.attributed THEN 'deferred'
                    WHEN d.has_object THEN 'organic' END,
               NULL,
               CASE WHEN a.name IN ('purchase', 'refund')
                    THEN jsonb_build_object('revenue', (ARRAY[0.99, 4.99, 9.99, 29.99, 49])[1 + (s.id + d.n) % 5], 'currency', d.currency)
                    WHEN a.name = 'view_item' THEN jsonb_build_object('sku', 'sku-' || (s.id % 900 + 100)) END,
               NULL, 'ok'
        FROM seed_sessions s JOIN seed_devices d ON d.n = s.n CROSS JOIN seed_params p
        CROSS JOIN LATERAL (
            SELECT g.i, s.start_at + g.i * interval '7 seconds' AS at,
                   CASE WHEN g.i = 0 THEN 'app_open'
                        WHEN g.i = 1 AND s.s = d.signup_session THEN 'sign_up'
                        WHEN g.i = 2 AND s.s = d.purchase_session THEN 'purchase'
                        WHEN g.i = 3 AND s.s = d.purchase_session + 1 AND d.n % 14 = 0 THEN 'refund'
                        ELSE (ARRAY['view_item', 'search', 'add_to_cart', 'article_read', 'login', 'share', 'level_up',
                                    'tutorial_begin', 'view_item', 'search'])[1 + (g.i * 7 + s.id) % 10]
                   END AS name
            FROM generate_series(0, s.actions) g(i)
        ) a
        WHERE a.at < p.end_at
        ORDER BY a.at
        """,
        """
        -- in key order: the primary key is then built left to right instead of by random inserts
        INSERT INTO event_ids (app_id, event_id, event_time)
        SELECT app_id, event_id, event_time FROM events WHERE app_id = (SELECT app FROM seed_params) ORDER BY 1, 2
        """,
        """
        INSERT INTO devices (app_id, device_id, first_seen, platform, install_click_id, first_sdk, install_click_at)
        SELECT p.app, d.device_id, d.install_at, d.platform, CASE WHEN d.attributed THEN 'w' || d.n END, 'seed/1.0',
               CASE WHEN d.attributed THEN d.install_at END
        FROM seed_devices d, seed_params p
        """,
        """
        INSERT INTO links (app_id, path, first_seen)
        SELECT app_id, path, min(click_time) FROM clicks WHERE app_id = (SELECT app FROM seed_params) GROUP BY 1, 2
        ON CONFLICT DO NOTHING
        """,
        """
        INSERT INTO load_checkpoints (node, segment, frame_offset, loaded_events, newest_received_at)
        SELECT 'seed', 0, 0, 0, p.end_at + interval '1 minute' FROM seed_params p
        ON CONFLICT (node) DO UPDATE SET newest_received_at = EXCLUDED.newest_received_at
        """,
    ]
}
