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

    /// The current day in `app`'s reporting time zone (`report_apps.today`, sql/064): where a report
    /// range without an end ends. Today in UTC when the app is unknown, or PostgreSQL does not know
    /// its time zone (the report then refuses it, saying which).
    ///
    /// - Throws: `ReportError.database` when the query fails. Until 2026-12-05 a failure (a timeout,
    ///   a dropped connection) read as "today in UTC", and for an app east of UTC the report then
    ///   left out its current day without a word.
    package func today(app: String) throws(ReportError) -> ReportDay {
        let text = try run {
            try connection.query(
                """
                SELECT to_char(today, 'YYYY-MM-DD') AS today FROM report_apps
                WHERE app_id = \(app) AND report_is_time_zone(time_zone)
                """
            ).first?["today", as: String.self]
        }
        return text.flatMap { ReportDay(iso8601: $0) } ?? .todayUTC
    }

    /// Parses report parameters (`ReportQuery.parse`) with `to` defaulting to `today`, else to the
    /// app's today (one query, made only when the parameters give no `to`): what the CLI and the API
    /// both run.
    package func query(
        _ parameters: [String: String], today: ReportDay? = nil, defaultFormat: ReportFormat
    ) throws(ReportError) -> ReportQuery {
        var end = today
        if end == nil, parameters["to"] == nil, let app = parameters["app"] { end = try self.today(app: app) }
        return try ReportQuery.parse(parameters, today: end ?? .todayUTC, defaultFormat: defaultFormat)
    }

    /// What the CLI and the API serve: `parameters` parsed (`query(_:today:defaultFormat:)`) and the
    /// report of `kind` run for them, every statement in one snapshot (`inSnapshot`).
    package func served(
        _ kind: ReportKind, _ parameters: [String: String], today: ReportDay? = nil, defaultFormat: ReportFormat
    ) throws(ReportError) -> (query: ReportQuery, report: any RenderableReport) {
        try inSnapshot { () throws(ReportError) in
            let query = try self.query(parameters, today: today, defaultFormat: defaultFormat)
            return (query, try report(kind, query))
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

    /// Runs the report named by `kind` (`links`, `funnel`, `retention`, `attribution`).
    ///
    /// - Throws: `ReportError.invalidParameter` for an unknown kind, else as the report does.
    package func report(
        _ kind: ReportKind, app: String, from: ReportDay, to: ReportDay, path: String? = nil
    ) throws(ReportError) -> any RenderableReport {
        switch kind {
        case .links:
            return try servedFromLines(kind, app: app, from: from, to: to, path: path) {
                try LinkLines(try connection.query(ReportSQL.linkSummary(app: app, from: from, to: to, path: path)))
                    .tables
            }
        case .funnel:
            return try servedFromLines(kind, app: app, from: from, to: to, path: path) {
                try FunnelLines(try connection.query(ReportSQL.funnelSummary(app: app, from: from, to: to, path: path)))
                    .tables
            }
        case .retention: return try retention(app: app, from: from, to: to, path: path)
        case .attribution:
            return try servedFromLines(kind, app: app, from: from, to: to, path: path) {
                try AttributionLines(
                    try connection.query(ReportSQL.attributionSummary(app: app, from: from, to: to, path: path))
                ).tables(installs: try installs(app: app, from: from, to: to))
            }
        }
    }

    /// Runs the report named by `kind` for `query`'s app, days and link, totalled per link with
    /// `by=link`, with only `query.table` when it names one.
    ///
    /// - Throws: `ReportError.invalidParameter` for a table the report does not have (before any
    ///   query), else as `report(_:app:from:to:path:)`.
    package func report(_ kind: ReportKind, _ query: ReportQuery) throws(ReportError) -> any RenderableReport {
        if let table = query.table, !kind.tableNames.contains(table) {
            throw .invalidParameter(
                name: "table",
                message:
                    "the \(kind.rawValue) report has \(kind.tableNames.joined(separator: " and ")), not "
                    + (table.isEmpty ? "an empty name" : String(table.prefix(64)))
            )
        }
        let report: any RenderableReport
        if query.by == "link" {
            guard kind == .links else {
                throw .invalidParameter(name: "by", message: "by=link totals the links report only")
            }
            report = try LinkTotalsReport(try links(app: query.app, from: query.from, to: query.to, path: query.path))
        } else {
            report = try self.report(kind, app: query.app, from: query.from, to: query.to, path: query.path)
        }
        guard let table = query.table else { return report }
        return ReportTableSelection(report: report, table: table)
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
    /// Sorts and hashes of a whole-history rebuild get `ReportSQL.rebuildWorkMemory` each (set for
    /// this call only): with the default 4 MB the device-state pass spills to disk and takes twice as long.
    package func rebuild() throws(ReportError) {
        try run {
            try connection.unsafeSQL("SET work_mem = '\(ReportSQL.rebuildWorkMemory)'")
            defer { try? connection.unsafeSQL("RESET work_mem") }
            _ = try connection.query(ReportSQL.rebuild)
        }
    }

    // MARK: - Helpers

    /// Checks the range, that the app exists and that PostgreSQL knows its time zone (until
    /// 2026-12-05 such an app's report answered empty tables, or failed as `database_unavailable`,
    /// naming nothing), and returns the load watermark (one query).
    func validate(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> String? {
        guard from <= to else {
            throw .invalidParameter(name: "from", message: "\(from) is after to (\(to))")
        }
        let (found, watermark, unknownZone) = try run {
            let row = try connection.query(ReportSQL.appExists(app)).first
            return (
                try row?["found", as: Bool.self] ?? false, try row?["watermark", as: String?.self] ?? nil,
                try row?["unknown_time_zone", as: String?.self] ?? nil
            )
        }
        guard found else { throw .unknownApp(app) }
        if let unknownZone { throw .unknownTimeZone(app: app, timeZone: unknownZone) }
        return watermark
    }

    /// Runs `body`'s queries in one snapshot: a read-only repeatable-read transaction, so a load or
    /// rollup pass committing meanwhile shows in all of what they read or in none of it (the
    /// watermark stated, the per-link rows and the app-wide installs agree). Until 2026-12-05 the
    /// API and `report` CLI read in several statements, each seeing what had committed by then.
    ///
    /// - Throws: what `body` throws (a `ReportError` as it is), `ReportError.database` for the
    ///   transaction's own statements.
    package func inSnapshot<T>(_ body: () throws(ReportError) -> T) throws(ReportError) -> T {
        try run {
            try connection.withTransaction { connection in
                try connection.unsafeSQL("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return try body()
            }
        }
    }

    /// Runs a body of queries, mapping every failure to `ReportError.database` (with the hint to
    /// migrate when the schema lacks what a query names: `report links` on a database never migrated
    /// said only `relation "report_funnel_definitions" does not exist` until 2026-12-02).
    func run<T>(_ body: () throws -> T) throws(ReportError) -> T {
        do {
            return try body()
        } catch let error as ReportError {
            throw error
        } catch {
            throw .database(message: "\(error)\((error as? PostgresError)?.missingSchemaHint ?? "")")
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
