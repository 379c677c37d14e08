import Postgres

extension ReportService {
    /// The per-link report assembled from the four per-link views (`report_link_daily`, `_events`,
    /// `_revenue`, `_utm`): what `links` returned before `report_link_summary` (sql/054). Kept as the
    /// reference `links` must equal (tests) and as the baseline `ReportBenchmark` times it against.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter` when `from > to`, `.database`.
    package func linksFromViews(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> LinkReport {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            var rows: [RowKey: LinkDayRow] = [:]
            for row in try connection.query(ReportSQL.linkDaily(app: app, from: from, to: to)) {
                let key = try RowKey(row)
                var link = LinkDayRow(path: key.path, day: key.day)
                link.clicks = try row["clicks", as: Int.self]
                link.universalLinkOpens = try row["universal_link_opens", as: Int.self]
                link.matchedInstalls = try row["matched_installs", as: Int.self]
                link.attributedInstalls = try row["attributed_installs", as: Int.self]
                link.installRate = try row["install_rate", as: String?.self]
                link.reengagements = try row["reengagements", as: Int.self]
                link.ios = try Self.platform(row, suffix: "_ios")
                link.android = try Self.platform(row, suffix: "_android")
                rows[key] = link
            }
            for row in try connection.query(ReportSQL.linkDailyEvents(app: app, from: from, to: to)) {
                let key = try RowKey(row)
                let name = try row["name", as: String.self]
                let counts = (
                    try row["events", as: Int.self], try row["events_ios", as: Int.self],
                    try row["events_android", as: Int.self]
                )
                let isAction = try row["kind", as: String.self] == "event"
                rows[key, default: LinkDayRow(path: key.path, day: key.day)].add(
                    isAction ? \.events : \.retentionEvents, isAction ? \.events : \.retentionEvents, name, counts)
            }
            for row in try connection.query(ReportSQL.linkDailyRevenue(app: app, from: from, to: to)) {
                let key = try RowKey(row)
                let amounts = (
                    try row["revenue", as: String.self], try row["revenue_ios", as: String.self],
                    try row["revenue_android", as: String.self]
                )
                rows[key, default: LinkDayRow(path: key.path, day: key.day)].add(
                    \.revenue, \.revenue, try row["currency", as: String.self], amounts)
            }
            var utm: [UTMRow] = []
            for row in try connection.query(ReportSQL.linkDailyUTM(app: app, from: from, to: to)) {
                let key = try RowKey(row)
                utm.append(
                    UTMRow(
                        path: key.path, day: key.day, source: try row["utm_source", as: String?.self],
                        medium: try row["utm_medium", as: String?.self],
                        campaign: try row["utm_campaign", as: String?.self],
                        clicks: try row["clicks", as: Int.self],
                        universalLinkOpens: try row["universal_link_opens", as: Int.self],
                        matchedInstalls: try row["matched_installs", as: Int.self],
                        attributedInstalls: try row["attributed_installs", as: Int.self],
                        installRate: try row["install_rate", as: String?.self]))
            }
            return LinkReport(
                app: app, from: from, to: to, watermark: watermark,
                rows: rows.values.sorted { ($0.path, $0.day) < ($1.path, $1.day) }, utm: utm)
        }
    }

    /// The funnel report assembled from `report_funnel` (one row per step): what `funnel` returned
    /// before `report_funnel_summary` (sql/054); the reference and benchmark baseline.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func funnelFromViews(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> FunnelReport {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            var rows: [FunnelStepRow] = []
            for row in try connection.query(ReportSQL.funnel(app: app, from: from, to: to)) {
                rows.append(
                    FunnelStepRow(
                        funnelID: try row["funnel_id", as: String.self],
                        funnelName: try row["funnel_name", as: String.self],
                        path: try row["path", as: String?.self], day: try Self.day(row, "day"),
                        step: try row["step", as: Int.self], stepName: try row["step_name", as: String.self],
                        devices: try row["devices", as: Int.self],
                        conversionFromPrevious: try row["conversion_from_previous", as: String?.self],
                        conversionOverall: try row["conversion_overall", as: String?.self],
                        medianSecondsFromPrevious: try row["median_seconds_from_previous", as: String?.self]))
            }
            return FunnelReport(app: app, from: from, to: to, watermark: watermark, rows: rows)
        }
    }

    /// The attribution report assembled from `report_attribution`, `_events` and `_revenue`: what
    /// `attribution` returned before `report_attribution_summary` (sql/054); the reference and
    /// benchmark baseline.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func attributionFromViews(app: String, from: ReportDay, to: ReportDay) throws(ReportError)
        -> AttributionReport
    {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            var rows: [RowKey: AttributionRow] = [:]
            for row in try connection.query(ReportSQL.attribution(app: app, from: from, to: to)) {
                let key = try RowKey(row)
                var value = AttributionRow(path: key.path, day: key.day)
                value.matchedInstalls = try row["matched_installs", as: Int.self]
                value.attributedInstalls = try row["attributed_installs", as: Int.self]
                value.cohortActions = try row["cohort_actions", as: Int.self]
                value.activityActions = try row["activity_actions", as: Int.self]
                value.lastTouchOpens = try row["last_touch_opens", as: Int.self]
                rows[key] = value
            }
            for row in try connection.query(ReportSQL.attributionEvents(app: app, from: from, to: to)) {
                let key = try RowKey(row)
                let name = try row["name", as: String.self]
                let count = try row["events", as: Int.self]
                if try row["basis", as: String.self] == "install_date" {
                    rows[key, default: AttributionRow(path: key.path, day: key.day)].cohortEvents[name] = count
                } else {
                    rows[key, default: AttributionRow(path: key.path, day: key.day)].activityEvents[name] = count
                }
            }
            for row in try connection.query(ReportSQL.attributionRevenue(app: app, from: from, to: to)) {
                let key = try RowKey(row)
                let currency = try row["currency", as: String.self]
                let amount = try row["revenue", as: String.self]
                if try row["basis", as: String.self] == "install_date" {
                    rows[key, default: AttributionRow(path: key.path, day: key.day)].cohortRevenue[currency] = amount
                } else {
                    rows[key, default: AttributionRow(path: key.path, day: key.day)].activityRevenue[currency] = amount
                }
            }
            return AttributionReport(
                app: app, from: from, to: to, watermark: watermark,
                rows: rows.values.sorted { ($0.path, $0.day) < ($1.path, $1.day) },
                installs: try installs(app: app, from: from, to: to))
        }
    }

    /// Retention cohorts from `report_retention` (grouped on the server): what `retention` read before
    /// `report_retention_summary` (sql/054); the reference and benchmark baseline.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func retentionFromViews(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> RetentionReport
    {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            var rows: [RetentionRow] = []
            for row in try connection.query(ReportSQL.retention(app: app, from: from, to: to)) {
                var retained: [Int?] = []
                var rates: [String?] = []
                for n in RetentionRow.days {
                    retained.append(try row["d\(n)", as: Int?.self])
                    rates.append(try row["d\(n)_rate", as: String?.self])
                }
                rows.append(
                    RetentionRow(
                        path: try row["path", as: String?.self], cohortDay: try Self.day(row, "cohort_day"),
                        cohortSize: try row["cohort_size", as: Int.self], retained: retained, rates: rates))
            }
            rows.sort { left, right in
                Self.precedes(left.path, right.path) ?? (left.cohortDay < right.cohortDay)
            }
            return RetentionReport(app: app, from: from, to: to, watermark: watermark, rows: rows)
        }
    }
}

extension LinkDayRow {
    /// Sets one name's (or currency's) value in the row's map and in each platform slice's.
    fileprivate mutating func add<Value>(
        _ total: WritableKeyPath<LinkDayRow, NamedValues<Value>>,
        _ slice: WritableKeyPath<PlatformCounts, NamedValues<Value>>, _ name: String, _ values: (Value, Value, Value)
    ) {
        self[keyPath: total][name] = values.0
        ios[keyPath: slice][name] = values.1
        android[keyPath: slice][name] = values.2
    }
}
