package import Postgres

/// Runs the report queries for one app and date range and returns typed rows with the load
/// watermark they were computed at. Not thread-safe (it owns no state but uses the caller's
/// connection, which is not): one service per connection.
package struct ReportService {
    /// The connection the queries run on (any role that can read the report views).
    package let connection: Connection

    /// Makes a service over a connection.
    package init(connection: Connection) { self.connection = connection }

    /// The load watermark: the newest `received_at` the aggregator has loaded (ISO 8601 UTC), nil
    /// before any load.
    package func watermark() throws(ReportError) -> String? {
        try run { try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil }
    }

    /// The per-link daily report (with platform splits, events, revenue and the UTM breakdown), read
    /// from `report_link_summary` in one query (one row per link and day, breakdowns as arrays).
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter` when `from > to`, `.database`.
    package func links(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> LinkReport {
        try validate(app: app, from: from, to: to)
        return try run {
            let watermark = try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil
            // One entry per link and day: its row and its UTM rows (in the order of the arrays).
            var links: [(row: LinkDayRow, utm: [UTMRow])] = []
            for row in try connection.query(ReportSQL.linkSummary(app: app, from: from, to: to)) {
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
                link.events = try Self.pairs(row, "event_names", "event_counts", as: Int.self)
                link.retentionEvents = try Self.pairs(row, "retention_names", "retention_counts", as: Int.self)
                link.revenue = try Self.pairs(row, "revenue_currencies", "revenue_amounts", as: String.self)
                let sources = try row["utm_sources", as: [String].self]
                let mediums = try row["utm_mediums", as: [String].self]
                let campaigns = try row["utm_campaigns", as: [String].self]
                let clicks = try row["utm_clicks", as: [Int].self]
                let opens = try row["utm_universal_link_opens", as: [Int].self]
                let matched = try row["utm_matched_installs", as: [Int].self]
                let attributed = try row["utm_attributed_installs", as: [Int].self]
                let rates = try row["utm_install_rates", as: [String].self]
                guard
                    [mediums.count, campaigns.count, clicks.count, opens.count, matched.count, attributed.count,
                     rates.count].allSatisfy({ $0 == sources.count })
                else { throw ReportError.database(message: "report_link_summary: UTM arrays of different lengths") }
                var utm: [UTMRow] = []
                utm.reserveCapacity(sources.count)
                for index in sources.indices {
                    utm.append(
                        UTMRow(
                            path: key.path, day: key.day, source: Self.absent(sources[index]),
                            medium: Self.absent(mediums[index]), campaign: Self.absent(campaigns[index]),
                            clicks: clicks[index], universalLinkOpens: opens[index], matchedInstalls: matched[index],
                            attributedInstalls: attributed[index], installRate: Self.absent(rates[index])))
                }
                links.append((link, utm))
            }
            links.sort { ($0.row.path, $0.row.day) < ($1.row.path, $1.row.day) }
            return LinkReport(
                app: app, from: from, to: to, watermark: watermark, rows: links.map(\.row), utm: links.flatMap(\.utm))
        }
    }

    /// The attribution report: per link and day (from `report_attribution_summary`, one row per link
    /// and day), plus app-wide installs per day.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func attribution(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> AttributionReport {
        try validate(app: app, from: from, to: to)
        return try run {
            let watermark = try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil
            var rows: [AttributionRow] = []
            for row in try connection.query(ReportSQL.attributionSummary(app: app, from: from, to: to)) {
                let key = try RowKey(row)
                var value = AttributionRow(path: key.path, day: key.day)
                value.matchedInstalls = try row["matched_installs", as: Int.self]
                value.attributedInstalls = try row["attributed_installs", as: Int.self]
                value.cohortActions = try row["cohort_actions", as: Int.self]
                value.activityActions = try row["activity_actions", as: Int.self]
                value.lastTouchOpens = try row["last_touch_opens", as: Int.self]
                value.cohortEvents = try Self.pairs(row, "cohort_names", "cohort_counts", as: Int.self)
                value.activityEvents = try Self.pairs(row, "activity_names", "activity_counts", as: Int.self)
                value.cohortRevenue = try Self.pairs(row, "cohort_currencies", "cohort_amounts", as: String.self)
                value.activityRevenue = try Self.pairs(row, "activity_currencies", "activity_amounts", as: String.self)
                rows.append(value)
            }
            rows.sort { ($0.path, $0.day) < ($1.path, $1.day) }
            return AttributionReport(
                app: app, from: from, to: to, watermark: watermark, rows: rows,
                installs: try installs(app: app, from: from, to: to))
        }
    }

    /// App-wide installs per day (`report_installs_daily`).
    func installs(app: String, from: ReportDay, to: ReportDay) throws -> [InstallsRow] {
        var installs: [InstallsRow] = []
        for row in try connection.query(ReportSQL.installs(app: app, from: from, to: to)) {
            installs.append(
                InstallsRow(
                    day: try Self.day(row, "day"), installs: try row["installs", as: Int.self],
                    attributedInstalls: try row["attributed_installs", as: Int.self],
                    organicInstalls: try row["organic_installs", as: Int.self],
                    unattributableInstalls: try row["unattributable_installs", as: Int.self]))
        }
        return installs
    }

    /// The default link funnel and the app's funnels per cohort day, read from
    /// `report_funnel_summary` (one row per funnel, link and day, steps as arrays).
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func funnel(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> FunnelReport {
        try validate(app: app, from: from, to: to)
        return try run {
            let watermark = try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil
            // One group of step rows per funnel, link and day.
            var groups: [[FunnelStepRow]] = []
            for row in try connection.query(ReportSQL.funnelSummary(app: app, from: from, to: to)) {
                let funnelID = try row["funnel_id", as: String.self]
                let funnelName = try row["funnel_name", as: String.self]
                let path = try row["path", as: String?.self]
                let day = try Self.day(row, "day")
                let steps = try row["steps", as: [Int].self]
                let names = try row["step_names", as: [String].self]
                let devices = try row["devices", as: [Int].self]
                let fromPrevious = try row["conversions_from_previous", as: [String].self]
                let overall = try row["conversions_overall", as: [String].self]
                let medians = try row["median_seconds_from_previous", as: [String].self]
                guard
                    [names.count, devices.count, fromPrevious.count, overall.count, medians.count].allSatisfy({
                        $0 == steps.count
                    })
                else { throw ReportError.database(message: "report_funnel_summary: step arrays of different lengths") }
                var group: [FunnelStepRow] = []
                group.reserveCapacity(steps.count)
                for index in steps.indices {
                    group.append(
                        FunnelStepRow(
                            funnelID: funnelID, funnelName: funnelName, path: path, day: day, step: steps[index],
                            stepName: names[index], devices: devices[index],
                            conversionFromPrevious: Self.absent(fromPrevious[index]),
                            conversionOverall: Self.absent(overall[index]),
                            medianSecondsFromPrevious: Self.absent(medians[index])))
                }
                if !group.isEmpty { groups.append(group) }
            }
            // The order of `ReportSQL.funnel`: the default funnel first, then by funnel, link (organic
            // last), day.
            groups.sort { left, right in
                let (a, b) = (left[0], right[0])
                if (a.funnelID == "default") != (b.funnelID == "default") { return a.funnelID == "default" }
                if a.funnelID != b.funnelID { return a.funnelID < b.funnelID }
                return Self.precedes(a.path, b.path) ?? (a.day < b.day)
            }
            return FunnelReport(app: app, from: from, to: to, watermark: watermark, rows: groups.flatMap { $0 })
        }
    }

    /// Retention cohorts installed between `from` and `to` (from `report_retention_summary`).
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func retention(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> RetentionReport {
        try validate(app: app, from: from, to: to)
        return try run {
            let watermark = try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil
            var rows: [RetentionRow] = []
            for row in try connection.query(ReportSQL.retentionSummary(app: app, from: from, to: to)) {
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

    /// Runs the report named by `kind` (`links`, `funnel`, `retention`, `attribution`).
    ///
    /// - Throws: `ReportError.invalidParameter` for an unknown kind, else as the report does.
    package func report(_ kind: ReportKind, app: String, from: ReportDay, to: ReportDay) throws(ReportError)
        -> any RenderableReport
    {
        switch kind {
        case .links: return try links(app: app, from: from, to: to)
        case .funnel: return try funnel(app: app, from: from, to: to)
        case .retention: return try retention(app: app, from: from, to: to)
        case .attribution: return try attribution(app: app, from: from, to: to)
        }
    }

    /// Applies rollup work queued by `queue_rollups` (a no-op when the loader refreshes at once);
    /// needs the writer role. Returns the number of (app, day) keys recomputed.
    ///
    /// - Throws: `ReportError.database`.
    @discardableResult
    package func processPending() throws(ReportError) -> Int {
        try run { try connection.query(ReportSQL.processPending).first?["days", as: Int.self] ?? 0 }
    }

    /// Recomputes every rollup from the raw tables (`report rebuild`); needs the writer role.
    ///
    /// - Throws: `ReportError.database`.
    package func rebuild() throws(ReportError) {
        try run { _ = try connection.query(ReportSQL.rebuild) }
    }

    // MARK: - Helpers

    func validate(app: String, from: ReportDay, to: ReportDay) throws(ReportError) {
        guard from <= to else {
            throw .invalidParameter(name: "from", message: "\(from) is after to (\(to))")
        }
        let found = try run { try connection.query(ReportSQL.appExists(app)).first?["found", as: Bool.self] ?? false }
        guard found else { throw .unknownApp(app) }
    }

    /// Runs a body of queries, mapping every failure to `ReportError.database`.
    func run<T>(_ body: () throws -> T) throws(ReportError) -> T {
        do {
            return try body()
        } catch let error as ReportError {
            throw error
        } catch {
            throw .database(message: "\(error)")
        }
    }

    static func platform(_ row: Row, suffix: String) throws -> PlatformCounts {
        var counts = PlatformCounts()
        counts.clicks = try row["clicks" + suffix, as: Int.self]
        counts.universalLinkOpens = try row["universal_link_opens" + suffix, as: Int.self]
        counts.matchedInstalls = try row["matched_installs" + suffix, as: Int.self]
        counts.attributedInstalls = try row["attributed_installs" + suffix, as: Int.self]
        counts.reengagements = try row["reengagements" + suffix, as: Int.self]
        return counts
    }

    /// Two parallel array columns (names and values) as a dictionary.
    static func pairs<Value: PostgresDecodable & PostgresArrayElement>(
        _ row: Row, _ names: String, _ values: String, as type: Value.Type
    ) throws -> [String: Value] {
        let keys = try row[names, as: [String].self]
        let items = try row[values, as: [Value].self]
        guard keys.count == items.count else {
            throw ReportError.database(message: "\(names) and \(values) have different lengths")
        }
        return Dictionary(zip(keys, items), uniquingKeysWith: { _, last in last })
    }

    /// Link order with the organic "link" (nil) last, as SQL's `path NULLS LAST`: nil when equal.
    static func precedes(_ left: String?, _ right: String?) -> Bool? {
        guard left != right else { return nil }
        guard let left else { return false }
        guard let right else { return true }
        return left < right
    }

    /// '' (the rollups' "none") as nil.
    static func absent(_ text: String) -> String? { text.isEmpty ? nil : text }

    static func day(_ row: Row, _ column: String) throws -> ReportDay {
        let text = try row[column, as: String.self]
        guard let day = ReportDay(iso8601: text) else {
            throw ReportError.database(message: "column \(column): not a date: \(text)")
        }
        return day
    }

    /// A (path, day) key of the per-link maps.
    struct RowKey: Hashable {
        var path: String
        var day: ReportDay

        init(_ row: Row) throws {
            path = try row["path", as: String.self]
            day = try ReportService.day(row, "day")
        }
    }
}
