package import Postgres

/// The report queries, one named constant (a function of its binds) each. Every query reads the
/// report views of `sql/052_report_views.sql` only, so it runs the same as the `detour_analyst` role.
/// Days are bound as `YYYY-MM-DD` text; decimals and days are selected as text so they decode
/// exactly.
package enum ReportSQL {
    /// The load watermark. Columns: `watermark` (text, ISO 8601 UTC with microseconds, NULL before
    /// any load).
    package static let watermark: SQL = """
        SELECT to_char(w.watermark AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS watermark
        FROM report_watermark w
        """

    /// The time through which every node's log has been loaded (`report_watermark.loaded_through`,
    /// sql/063), which decides which retention days are over (sql/077). Columns: `loaded_through`
    /// (text, as `watermark`; NULL while a node has never been read).
    package static let loadedThrough: SQL = """
        SELECT to_char(w.loaded_through AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS loaded_through
        FROM report_watermark w
        """

    /// Whether an app exists, and the load watermark, in one round trip (every report starts with
    /// both). Columns: `found` (bool), `watermark` (as in `watermark`), `unknown_time_zone` (the
    /// app's zone when PostgreSQL does not know it, else NULL: its days cannot be told, sql/079).
    package static func appExists(_ app: String) -> SQL {
        """
        SELECT EXISTS (SELECT 1 FROM report_funnel_definitions WHERE app_id = \(app)) AS found,
               (SELECT to_char(w.watermark AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') FROM report_watermark w)
                   AS watermark,
               (SELECT r.time_zone FROM report_apps r WHERE r.app_id = \(app) AND NOT report_is_time_zone(r.time_zone))
                   AS unknown_time_zone
        """
    }

    /// Per link and day. Columns: `path`, `day`, `clicks`, `universal_link_opens`, `matched_installs`,
    /// `attributed_installs`, `install_rate` (text, NULL when clicks = 0), `reengagements`, and the
    /// `_ios` / `_android` variant of each count.
    package static func linkDaily(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT path, day::text AS day, clicks, universal_link_opens, matched_installs, attributed_installs,
               install_rate::text AS install_rate, reengagements,
               clicks_ios, universal_link_opens_ios, matched_installs_ios, attributed_installs_ios, reengagements_ios,
               clicks_android, universal_link_opens_android, matched_installs_android, attributed_installs_android,
               reengagements_android
        FROM report_link_daily
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        ORDER BY path, day
        """
    }

    /// The per-link report in one read: one row per link and day of `report_link_summary` (sql/054),
    /// as the packed text column `line` stored with the row (`report_link_summary_lines`, sql/055;
    /// decoded by `ReportPacked`): the path as its length in bytes, a comma and the path; the day,
    /// the counts of `linkDaily` (`clicks`, `universal_link_opens`, `matched_installs`,
    /// `attributed_installs`, `reengagements`, then those five `_ios` and `_android`), `install_rate`
    /// ('' when NULL), each followed by a comma; then the breakdowns as parallel arrays in
    /// PostgreSQL's array output, back to back: `event_names`, `event_counts`, `retention_names`,
    /// `retention_counts`, `revenue_currencies`, `revenue_amounts` (exact decimal text),
    /// `utm_sources`, `utm_mediums`, `utm_campaigns` ('' = absent), `utm_clicks`,
    /// `utm_universal_link_opens`, `utm_matched_installs`, `utm_attributed_installs`,
    /// `utm_install_rates` ('' = NULL), ending the line. Beside it, `platform_line` (sql/066): the
    /// platform splits parallel to the names and currencies, as arrays back to back:
    /// `event_counts_ios`, `event_counts_android`, `retention_counts_ios`, `retention_counts_android`,
    /// `revenue_amounts_ios`, `revenue_amounts_android`. The line is written when the summary row is,
    /// so this read is a plain scan (building it here, mostly the arrays' text output, was most of the
    /// query). Unordered: `ReportService.links` orders the rows by path and day.
    package static func linkSummary(app: String, from: ReportDay, to: ReportDay, path: String? = nil) -> SQL {
        summaryLines(
            "SELECT line, platform_line FROM report_link_summary_lines", app: app, from: from, to: to, path: path)
    }

    /// `select` (the columns of a summary lines view) for one app and range of days, and one link
    /// with `path`.
    private static func summaryLines(_ select: SQL, app: String, from: ReportDay, to: ReportDay, path: String?) -> SQL {
        var sql = select
        sql.append("\nWHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date")
        sql.append(onePath(path))
        return sql
    }

    /// `AND path = <path>` when a report is asked for one link (the summary lines' `path` column,
    /// sql/067), else nothing.
    private static func onePath(_ path: String?) -> SQL {
        guard let path else { return "" }
        return "\nAND path = \(path)"
    }

    /// Events of attributed devices per link and day. Columns: `path`, `day`, `kind`
    /// (`event`|`retention`), `name`, `events`, `events_ios`, `events_android`.
    package static func linkDailyEvents(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT path, day::text AS day, kind, name, events, events_ios, events_android
        FROM report_link_daily_events
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        ORDER BY path, day, kind, name
        """
    }

    /// Revenue of attributed devices per link, day and currency. Columns: `path`, `day`,
    /// `currency`, `revenue`, `revenue_ios`, `revenue_android` (exact decimal text).
    package static func linkDailyRevenue(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT path, day::text AS day, currency, revenue::text AS revenue, revenue_ios::text AS revenue_ios,
               revenue_android::text AS revenue_android
        FROM report_link_daily_revenue
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        ORDER BY path, day, currency
        """
    }

    /// UTM breakdown. Columns: `path`, `day`, `utm_source`, `utm_medium`, `utm_campaign` (NULL when
    /// absent), `clicks`, `universal_link_opens`, `matched_installs`, `attributed_installs`, `install_rate` (text).
    package static func linkDailyUTM(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT path, day::text AS day, utm_source, utm_medium, utm_campaign, clicks, universal_link_opens,
               matched_installs, attributed_installs, install_rate::text AS install_rate
        FROM report_link_daily_utm
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        ORDER BY path, day, utm_source NULLS FIRST, utm_medium NULLS FIRST, utm_campaign NULLS FIRST
        """
    }

    /// Attribution per link and day. Columns: `path`, `day`, `matched_installs`, `attributed_installs`,
    /// `cohort_actions`, `activity_actions`, `last_touch_opens`. Unordered (the service keys rows by
    /// path and day and sorts them itself; sorting on the server only costs).
    package static func attribution(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT path, day::text AS day, matched_installs, attributed_installs, cohort_actions, activity_actions,
               last_touch_opens
        FROM report_attribution
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        """
    }

    /// Attribution per link and day in one read: one row per link and day of
    /// `report_attribution_summary` (sql/054) as the packed `line` stored with the row
    /// (`report_attribution_summary_lines`, sql/055), like `linkSummary`: the path (its length in
    /// bytes, a comma, the path); the day, `matched_installs`,
    /// `attributed_installs`, `cohort_actions`, `activity_actions`, `last_touch_opens`, each followed by
    /// a comma; then the actions and revenue of attributed devices as parallel arrays, by install date
    /// (`cohort_names`, `cohort_counts`, `cohort_currencies`, `cohort_amounts`) and by event date
    /// (`activity_names`, `activity_counts`, `activity_currencies`, `activity_amounts`), amounts as exact
    /// decimal text, ending the line. Unordered.
    package static func attributionSummary(app: String, from: ReportDay, to: ReportDay, path: String? = nil) -> SQL {
        summaryLines("SELECT line FROM report_attribution_summary_lines", app: app, from: from, to: to, path: path)
    }

    /// Actions of attributed devices by name. Columns: `path`, `day`, `basis`
    /// (`install_date`|`event_date`), `name`, `events`. Unordered.
    package static func attributionEvents(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT path, day::text AS day, basis, name, events
        FROM report_attribution_events
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        """
    }

    /// Revenue of attributed devices per currency. Columns: `path`, `day`, `basis`, `currency`,
    /// `revenue` (exact decimal text). Unordered.
    package static func attributionRevenue(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT path, day::text AS day, basis, currency, revenue::text AS revenue
        FROM report_attribution_revenue
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        """
    }

    /// App-wide installs per day. Columns: `day`, `installs`, `attributed_installs`,
    /// `organic_installs`, `unattributable_installs`.
    package static func installs(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT day::text AS day, installs, attributed_installs, organic_installs, unattributable_installs
        FROM report_installs_daily
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        ORDER BY day
        """
    }

    /// Funnel steps per cohort day. Columns: `funnel_id`, `funnel_name`, `path` (NULL = organic),
    /// `day`, `step`, `step_name`, `devices`, `conversion_from_previous`, `conversion_overall`,
    /// `median_seconds_from_previous` (the last three exact decimal text or NULL).
    package static func funnel(app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT funnel_id, funnel_name, path, day::text AS day, step, step_name, devices,
               conversion_from_previous::text AS conversion_from_previous,
               conversion_overall::text AS conversion_overall,
               trim_scale(median_seconds_from_previous)::text AS median_seconds_from_previous
        FROM report_funnel
        WHERE app_id = \(app) AND day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        ORDER BY funnel_id = 'default' DESC, funnel_id, path NULLS LAST, day, step
        """
    }

    /// Funnel steps in one read: one row per funnel, link and cohort day of `report_funnel_summary`
    /// (sql/054) as one text column `line` (`report_funnel_summary_lines`, sql/055): the funnel id and
    /// the funnel name, each as its length in bytes, a comma and the text; then the part stored with
    /// the row: the day and a comma, then per step, in order, the arrays `steps`, `step_names`,
    /// `devices`, `conversions_from_previous`, `conversions_overall`, `median_seconds_from_previous`
    /// ('' = NULL); the rest of the line is `-` for the organic "link" (NULL path), else `+` and the
    /// path. Unordered (`ReportService.funnel` sorts the way `funnel` orders).
    package static func funnelSummary(app: String, from: ReportDay, to: ReportDay, path: String? = nil) -> SQL {
        summaryLines("SELECT line FROM report_funnel_summary_lines", app: app, from: from, to: to, path: path)
    }

    /// Retention cohorts. Columns: `path` (NULL = organic), `cohort_day`, `cohort_size`, `d1`, `d3`,
    /// `d7`, `d14`, `d30` (NULL while not reached), `d1_rate` ... `d30_rate` (exact decimal text).
    /// Unordered (`ReportService.retention` sorts by link, organic last, then cohort day).
    package static func retention(app: String, from: ReportDay, to: ReportDay) -> SQL {
        retention(view: "report_retention", app: app, from: from, to: to)
    }

    /// Retention cohorts from the per-install-day sums (`report_retention_summary`, sql/054): the
    /// rows of `retention`, without grouping on the server, each packed into one text column `line`
    /// (decoded by `ReportPacked`; one field per row instead of 13 halves the read at 30k cohorts):
    /// the path as its length in bytes, a comma and the path (`-1,` for the organic "link", NULL);
    /// `cohort_day`, `cohort_size`, `d1`, `d3`, `d7`, `d14`, `d30` ('' while not reached), each followed
    /// by a comma. Not the view's `dN_rate` columns: the service computes each from `dN` and
    /// `cohort_size` (`ExactRate`, the same text), which halves the line and saves the server a `numeric`
    /// division and rounding per rate (about 40 of 110 ms for 29k cohorts of the 10M seed).
    /// Unordered (`ReportService.retention` orders by link, organic last, then cohort day).
    package static func retentionSummary(app: String, from: ReportDay, to: ReportDay, path: String? = nil) -> SQL {
        var sql: SQL = """
            SELECT concat(
                       coalesce(octet_length(path), -1), ',', path, to_char(cohort_day, 'YYYY-MM-DD'), ',', cohort_size, ',',
                       d1, ',', d3, ',', d7, ',', d14, ',', d30, ',') AS line
            FROM report_retention_summary
            WHERE app_id = \(app) AND cohort_day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
            """
        sql.append(onePath(path))
        return sql
    }

    /// The retention columns read from `view` (both retention views have the same columns).
    private static func retention(view: String, app: String, from: ReportDay, to: ReportDay) -> SQL {
        """
        SELECT path, cohort_day::text AS cohort_day, cohort_size, d1, d3, d7, d14, d30,
               d1_rate::text AS d1_rate, d3_rate::text AS d3_rate, d7_rate::text AS d7_rate,
               d14_rate::text AS d14_rate, d30_rate::text AS d30_rate
        FROM \(identifier: view)
        WHERE app_id = \(app) AND cohort_day BETWEEN \(from.iso8601)::date AND \(to.iso8601)::date
        """
    }

    /// Whether day `day` of `app` is completely loaded. Columns: `watermark` (text or NULL: the
    /// loads', `report_watermark.loads_watermark`), `required` (text: end of the day in the app's
    /// time zone plus `graceSeconds`), `complete` (bool: every node's log was loaded through
    /// `required`, `loads_through` of sql/083, 063's `loaded_through`: per node the
    /// later of its newest loaded `received_at` and when a cycle last read it to its end, the
    /// earliest over the nodes), `pending_days` (rollup days up to `day` queued by `queue_rollups`
    /// and not processed yet), `behind` (text: the nodes not loaded through `required`, one per line),
    /// `unknown_time_zone` (the app's zone when PostgreSQL does not know it, else NULL; `required` is
    /// then figured in UTC so that the row still comes).
    /// The loads' values, not the rolled-up ones a report states (sql/083): with no work queued for
    /// `day` or a day before it (`pending_days`), their rollups count every loaded row of them,
    /// whatever is queued for later days.
    /// A day queued after `day` does not count: what the report says of `day` and the days before
    /// it is in their own rollup rows, and under steady traffic a load queues the current day every
    /// few seconds, so until 2026-12-04 a finished day was refused (`rollups pending`) whenever the
    /// check came between such a load and the next rollup pass, most of the time for a busy app.
    /// Until 2026-12-04 the watermark alone (the newest `received_at` of any node) reaching
    /// `required` was enough too, so with several nodes a day was complete while a node that lagged
    /// behind still had unloaded segments of it.
    package static func completeness(app: String, day: ReportDay, graceSeconds: Int) -> SQL {
        """
        SELECT to_char(w.loads_watermark AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS watermark,
               to_char(r.required AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS required,
               coalesce(w.loads_through >= r.required, false) AS complete,
               CASE WHEN NOT z.known THEN s.time_zone END AS unknown_time_zone,
               (SELECT count(*) FROM rollup_pending_keys p
                WHERE p.app_id = \(app) AND p.day <= \(day.iso8601)::date) AS pending_days,
               (SELECT coalesce(string_agg(c.node, E'\\n' ORDER BY c.node), '') FROM load_checkpoints c
                WHERE coalesce(greatest(c.newest_received_at, c.caught_up_at) < r.required, true)) AS behind
        FROM report_watermark w CROSS JOIN rollup_settings(\(app)) s
        CROSS JOIN LATERAL (SELECT report_is_time_zone(s.time_zone) AS known) z
        CROSS JOIN LATERAL (
            SELECT report_day_start(\(day.iso8601)::date + 1, CASE WHEN z.known THEN s.time_zone ELSE 'UTC' END)
                + make_interval(secs => \(graceSeconds)) AS required) r
        """
    }

    /// Every app id, sorted. Columns: `id`.
    package static let apps: SQL = "SELECT id FROM apps ORDER BY id"

    /// Applies rollup work queued by `queue_rollups`. Columns: `days` (the (app, day) keys recomputed).
    package static let processPending: SQL = "SELECT process_rollups() AS days"

    /// Recomputes every rollup from the raw tables (`report rebuild`). Columns: `done`.
    package static let rebuild: SQL = "SELECT rebuild_rollups()::text AS done"

    /// `work_mem` for `rebuild` (a maintenance operation, like `maintenance_work_mem`: each sort or
    /// hash of the rebuild's statements may use this much, a few at a time).
    package static let rebuildWorkMemory = "256MB"
}
