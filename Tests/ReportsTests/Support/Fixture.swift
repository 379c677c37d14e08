import Foundation
import Postgres
import Reports
import TestSupport

/// Raw rows for a hand-built world, loaded the way the aggregator loads them: each `load()` inserts
/// the pending rows into the raw and dedup tables and calls `refresh_rollups` with the touched
/// (app, UTC day) keys, in one transaction. With `staging`, the rows also go into
/// `pg_temp.load_staging` first, as the aggregator's cycle leaves them (the precise path of the
/// refresh); without it, the refresh treats whole UTC days as touched.
final class Fixture {
    let connection: Connection
    let staging: Bool
    /// Queue the work (`queue_rollups`) instead of refreshing at once; `process()` applies it.
    let queued: Bool
    private var pending: [SQL] = []
    private var touched: [(String, String)] = []
    private var counter = 0

    init(_ connection: Connection, staging: Bool = true, queued: Bool = false) {
        self.connection = connection
        self.staging = staging
        self.queued = queued
    }

    /// Applies queued rollup work.
    func process() throws {
        try connection.execute("SELECT process_rollups()")
    }

    /// Creates an app with its report settings.
    func app(_ id: String, timeZone: String = "UTC") throws {
        try connection.execute("INSERT INTO apps (id, name, time_zone) VALUES (\(id), \(id), \(timeZone))")
    }

    /// A click from the link service.
    func click(
        _ id: String, app: String = "a", path: String, at time: String, kind: String = "web", platform: String = "ios",
        source: String? = nil, medium: String? = nil, campaign: String? = nil
    ) {
        pending.append(
            """
            INSERT INTO click_ids (app_id, click_id, click_time) VALUES (\(app), \(id), \(time)::timestamptz)
            """)
        pending.append(
            """
            INSERT INTO clicks (app_id, click_id, path, click_kind, click_time, received_at, platform, utm_source,
                                utm_medium, utm_campaign)
            VALUES (\(app), \(id), \(path), \(kind), \(time)::timestamptz, \(time)::timestamptz, \(platform), \(source),
                    \(medium), \(campaign))
            """)
        stage(kind: "click", app: app, id: id, time: time, device: nil, click: id)
    }

    /// A deferred-install match of a click.
    func match(_ click: String, app: String = "a", at time: String) {
        pending.append(
            "INSERT INTO match_ids (app_id, click_id, match_time) VALUES (\(app), \(click), \(time)::timestamptz)")
        pending.append(
            """
            INSERT INTO matches (app_id, click_id, method, match_time, received_at)
            VALUES (\(app), \(click), 'deterministic', \(time)::timestamptz, \(time)::timestamptz)
            """)
        stage(kind: "match", app: app, id: "m_" + click, time: time, device: nil, click: click)
    }

    /// An SDK event (`kind` event or retention). `openType` non-nil (or a click id) marks an event
    /// that carries an attribution object.
    func event(
        _ name: String, device: String, app: String = "a", at time: String, kind: String = "event",
        platform: String = "ios", installClick: String? = nil, openClick: String? = nil, openType: String? = nil,
        data: String? = nil
    ) {
        counter += 1
        let id = "e\(counter)_\(device)_\(name)"
        pending.append(
            "INSERT INTO event_ids (app_id, event_id, event_time) VALUES (\(app), \(id), \(time)::timestamptz)")
        pending.append(
            """
            INSERT INTO events (app_id, event_id, kind, name, device_id, platform, event_time, received_at,
                                install_click_id, open_click_id, open_type, data)
            VALUES (\(app), \(id), \(kind), \(name), \(device), \(platform), \(time)::timestamptz, \(time)::timestamptz,
                    \(installClick), \(openClick), \(openType), \(data)::jsonb)
            """)
        stage(kind: kind, app: app, id: id, time: time, device: device, click: nil)
    }

    /// Inserts the pending rows and refreshes the rollups of what they touched, in one transaction.
    func load() throws {
        let statements = pending
        let keys = touched
        pending = []
        touched = []
        try connection.withTransaction { connection in
            if staging {
                try connection.unsafeSQL(
                    """
                    CREATE TEMP TABLE IF NOT EXISTS load_staging (kind text NOT NULL, app_id text NOT NULL,
                        event_id text NOT NULL, time timestamptz NOT NULL, device_id text, click_id text)
                        ON COMMIT DELETE ROWS
                    """)
            }
            for statement in statements { try connection.execute(statement) }
            guard !keys.isEmpty else { return }
            if queued {
                try connection.execute("SELECT queue_rollups(\(keys.map(\.0))::text[], \(keys.map(\.1))::date[])")
            } else {
                try connection.execute("SELECT refresh_rollups(\(keys.map(\.0))::text[], \(keys.map(\.1))::date[])")
            }
        }
    }

    /// Sets the load watermark (newest loaded received_at).
    func watermark(_ time: String) throws {
        try connection.execute(
            """
            INSERT INTO load_checkpoints (node, segment, frame_offset, newest_received_at)
            VALUES ('node-1', 1, 0, \(time)::timestamptz)
            ON CONFLICT (node) DO UPDATE SET newest_received_at = EXCLUDED.newest_received_at
            """)
    }

    /// Records that the aggregator found `node`'s log at its end at `time` (`caught_up_at`), creating
    /// the node's checkpoint with `newestReceivedAt` when it has none.
    func caughtUp(_ time: String, node: String = "node-1", newestReceivedAt: String? = nil) throws {
        try connection.execute(
            """
            INSERT INTO load_checkpoints (node, segment, frame_offset, newest_received_at, caught_up_at)
            VALUES (\(node), 1, 0, \(newestReceivedAt)::timestamptz, \(time)::timestamptz)
            ON CONFLICT (node) DO UPDATE SET caught_up_at = EXCLUDED.caught_up_at
            """)
    }

    private func stage(kind: String, app: String, id: String, time: String, device: String?, click: String?) {
        touched.append((app, String(time.prefix(10))))
        if staging {
            pending.append(
                """
                INSERT INTO pg_temp.load_staging (kind, app_id, event_id, time, device_id, click_id)
                VALUES (\(kind), \(app), \(id), \(time)::timestamptz, \(device), \(click))
                """)
        }
    }
}

/// Every rollup table and report view as sorted text lines, to compare the incremental result
/// with a rebuild.
func snapshot(_ connection: Connection) throws -> [String: [String]] {
    let relations = [
        "rollup_events_daily", "rollup_apps", "rollup_devices", "rollup_device_install_clicks", "rollup_clicks",
        "rollup_funnel_entries",
        "rollup_link_daily",
        "rollup_link_utm_daily",
        "rollup_link_events_daily", "rollup_link_revenue_daily", "rollup_cohort_events_daily",
        "rollup_cohort_revenue_daily", "rollup_installs_daily", "rollup_retention_daily", "rollup_funnel_daily",
        "rollup_link_summary", "rollup_funnel_summary", "rollup_cohort_events_total", "rollup_attribution_summary",
        "rollup_retention_summary", "report_link_summary", "report_funnel_summary", "report_attribution_summary",
        "report_retention_summary",
        "report_link_daily", "report_link_daily_events", "report_link_daily_revenue", "report_link_daily_utm",
        "report_installs_daily", "report_attribution", "report_attribution_events", "report_attribution_revenue",
        "report_funnel", "report_retention",
    ]
    var result: [String: [String]] = [:]
    for relation in relations {
        let rows = try connection.query(SQL(stringLiteral: "SELECT t::text AS line FROM \(relation) t"))
        result[relation] = try rows.map { try $0["line", as: String.self] }.sorted()
    }
    return result
}

/// A fresh test database with one connection; the caller defers `close()`.
struct Database {
    let db: TestDatabase
    let connection: Connection

    init() throws {
        db = try TestDatabase.make()
        connection = try db.connect()
    }

    func close() {
        connection.close()
        db.drop()
    }
}

/// Day helper.
func day(_ text: String) -> ReportDay { ReportDay(iso8601: text)! }

/// A per-link report of `count` link-days (paths with a quote to escape) and a UTM row each, for
/// the JSON writing tests (`RenderingTests.streamedJSON`, `ParallelJSONTests`).
func sampleLinkReport(rows count: Int) -> LinkReport {
    var rows: [LinkDayRow] = []
    var utm: [UTMRow] = []
    for index in 0..<count {
        var row = LinkDayRow(path: "/l/\(index % 37)\"", day: day("2026-06-01").adding(days: index % 30))
        row.clicks = index
        row.events = ["purchase": index, "sign_up": 1]
        row.revenue = ["USD": "\(index).99"]
        rows.append(row)
        utm.append(
            UTMRow(
                path: row.path, day: row.day, source: "s\(index)", medium: nil, campaign: "c", clicks: index,
                universalLinkOpens: 0, matchedInstalls: 1, attributedInstalls: 1, installRate: "0.5"))
    }
    return LinkReport(
        app: "acme", from: day("2026-06-01"), to: day("2026-06-30"), watermark: "w", rows: rows, utm: utm)
}
