import Foundation
package import Postgres

/// Times every report query for one app over a 30-day window (for the lead's `bench/` runs; never
/// used by tests for thresholds).
package enum ReportBenchmark {
    /// One timed query.
    package struct Timing: Sendable {
        /// What ran, e.g. `links` or `sql.link_daily`.
        package var name: String
        /// Median wall time over the runs, in milliseconds.
        package var medianMilliseconds: Double
        /// Fastest run, in milliseconds.
        package var minMilliseconds: Double
        /// Rows the query returned (for the service-level entries: rows of the main table).
        package var rows: Int
    }

    /// Times each report for `app` over the 30 days ending at `to` (default: the app's newest day with
    /// link activity, else today in UTC): every `ReportService` report end to end, each also as the API
    /// serves it (`<kind>.served`: the report and all its JSON, read as the server sends it; and
    /// `<kind>.json`: the JSON alone, of a report made once; `<kind>.json.zstd`: that JSON compressed
    /// as sent to a client that accepts zstd), each underlying SQL query on its
    /// own, and the daily job's queries for `to`. Each is run `runs` times (after one warm-up run).
    ///
    /// - Throws: `ReportError` from the queries.
    package static func run(connection: Connection, app: String, to: ReportDay? = nil, runs: Int = 5)
        throws(ReportError)
        -> [Timing]
    {
        let end: ReportDay
        if let to { end = to } else { end = try newestDay(connection, app: app) }
        let window = Window(app: app, start: end.adding(days: -29), end: end)
        let service = ReportService(connection: connection)
        var stopwatch = Stopwatch(runs: runs)
        try measureReports(service, window, &stopwatch)
        try measureServed(service, window, &stopwatch)
        try measureQueries(connection, window, &stopwatch)
        try stopwatch.measure("daily.content") {
            let content = try DailyReportContent.load(
                connection: connection, app: app, date: end, isComplete: true, requiredWatermark: "")
            return content.links.rows.count
        }
        return stopwatch.timings
    }

    /// The app and the 30 days a run reports on.
    private struct Window {
        let app: String
        let start: ReportDay
        let end: ReportDay
    }

    /// Times named bodies and keeps their timings in order.
    private struct Stopwatch {
        let runs: Int
        var timings: [Timing] = []

        /// Runs `body` once to warm up, then `runs` times timed; `body` returns the rows it read.
        mutating func measure(_ name: String, _ body: () throws -> Int) throws(ReportError) {
            var samples: [Double] = []
            var rows = 0
            do {
                rows = try body()  // warm-up
                for _ in 0..<max(1, runs) {
                    let started = DispatchTime.now().uptimeNanoseconds
                    rows = try body()
                    samples.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
                }
            } catch let error as ReportError {
                throw error
            } catch {
                throw .database(message: "\(error)")
            }
            samples.sort()
            timings.append(
                Timing(
                    name: name, medianMilliseconds: samples[samples.count / 2], minMilliseconds: samples[0], rows: rows)
            )
        }
    }

    /// Every `ReportService` report end to end: as served reads it, decoded into rows, and from the
    /// views (the baseline).
    private static func measureReports(
        _ service: ReportService, _ window: Window, _ stopwatch: inout Stopwatch
    ) throws(ReportError) {
        let (app, start, end) = (window.app, window.start, window.end)
        // The per-link report as `report(.links, ...)` reads it for serving: the query and the check
        // of every line (`LinkLines`; its rows are written from the lines with the JSON).
        try stopwatch.measure("links") { try service.report(.links, app: app, from: start, to: end).tables[0].count }
        // The same lines decoded into rows (`LinkReport`: what the daily job and the totals read).
        try stopwatch.measure("links.rows") { try service.links(app: app, from: start, to: end).rows.count }
        // The same report assembled from the four per-link views (the pre-054 way): the baseline.
        try stopwatch.measure("links.views") { try service.linksFromViews(app: app, from: start, to: end).rows.count }
        // The attribution as served reads it (`AttributionLines`), and decoded into rows (the daily
        // job's read).
        try stopwatch.measure("attribution") {
            try service.report(.attribution, app: app, from: start, to: end).tables[0].count
        }
        try stopwatch.measure("attribution.rows") { try service.attribution(app: app, from: start, to: end).rows.count }
        try stopwatch.measure("attribution.views") {
            try service.attributionFromViews(app: app, from: start, to: end).rows.count
        }
        // The funnel as served reads it (the query and the check of every line, `FunnelLines`), and
        // the same lines decoded into rows (`FunnelReport`: what the daily job reads).
        try stopwatch.measure("funnel") { try service.report(.funnel, app: app, from: start, to: end).tables[0].count }
        try stopwatch.measure("funnel.rows") { try service.funnel(app: app, from: start, to: end).rows.count }
        try stopwatch.measure("funnel.views") { try service.funnelFromViews(app: app, from: start, to: end).rows.count }
        try stopwatch.measure("retention") { try service.retention(app: app, from: start, to: end).rows.count }
        try stopwatch.measure("retention.views") {
            try service.retentionFromViews(app: app, from: start, to: end).rows.count
        }
    }

    /// Each report as the API answers it (and `report <kind> --format json` prints it): the same
    /// `ReportService.report` call in its read-only snapshot, then its JSON written as the API's body (`ReportJSONPieces`)
    /// and read out in libmicrohttpd's 64 KiB calls; also the JSON alone and compressed.
    private static func measureServed(
        _ service: ReportService, _ window: Window, _ stopwatch: inout Stopwatch
    ) throws(ReportError) {
        let (app, start, end) = (window.app, window.start, window.end)
        let piece = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { piece.deallocate() }
        func send(_ report: any RenderableReport, encoding: ReportEncoding? = nil) -> Int {
            let body = ReportJSONPieces(report, encoding: encoding)
            var bytes = 0
            while case let count = body.read(into: piece), count > 0 { bytes += count }
            return bytes > 0 ? report.tables.first?.count ?? 0 : 0
        }
        for kind in ReportKind.allCases {
            // In its snapshot, as served since 2026-12-05 (`inSnapshot`: three more statements).
            try stopwatch.measure(kind.rawValue + ".served") {
                send(
                    try service.inSnapshot { () throws(ReportError) in
                        try service.report(kind, app: app, from: start, to: end)
                    })
            }
            // The JSON alone, of a report made once: the writing's share of the served time.
            let report = try service.report(kind, app: app, from: start, to: end)
            try stopwatch.measure(kind.rawValue + ".json") { send(report) }
            // The same JSON compressed as the API sends it to a client that accepts zstd.
            try stopwatch.measure(kind.rawValue + ".json.zstd") { send(report, encoding: .zstd) }
        }
    }

    /// Each underlying SQL query on its own.
    private static func measureQueries(
        _ connection: Connection, _ window: Window, _ stopwatch: inout Stopwatch
    ) throws(ReportError) {
        let (app, start, end) = (window.app, window.start, window.end)
        let queries: [(String, SQL)] = [
            ("sql.link_summary", ReportSQL.linkSummary(app: app, from: start, to: end)),
            ("sql.link_daily", ReportSQL.linkDaily(app: app, from: start, to: end)),
            ("sql.link_daily_events", ReportSQL.linkDailyEvents(app: app, from: start, to: end)),
            ("sql.link_daily_revenue", ReportSQL.linkDailyRevenue(app: app, from: start, to: end)),
            ("sql.link_daily_utm", ReportSQL.linkDailyUTM(app: app, from: start, to: end)),
            ("sql.attribution_summary", ReportSQL.attributionSummary(app: app, from: start, to: end)),
            ("sql.attribution", ReportSQL.attribution(app: app, from: start, to: end)),
            ("sql.attribution_events", ReportSQL.attributionEvents(app: app, from: start, to: end)),
            ("sql.attribution_revenue", ReportSQL.attributionRevenue(app: app, from: start, to: end)),
            ("sql.installs", ReportSQL.installs(app: app, from: start, to: end)),
            ("sql.funnel_summary", ReportSQL.funnelSummary(app: app, from: start, to: end)),
            ("sql.funnel", ReportSQL.funnel(app: app, from: start, to: end)),
            ("sql.retention_summary", ReportSQL.retentionSummary(app: app, from: start, to: end)),
            ("sql.retention", ReportSQL.retention(app: app, from: start, to: end)),
        ]
        for (name, sql) in queries {
            try stopwatch.measure(name) { try connection.query(sql).count }
        }
    }

    /// The timings as an aligned text table.
    package static func render(_ timings: [Timing]) -> String {
        ReportRenderer.table(
            ReportTable(
                name: "timings", columns: ["query", "median_ms", "min_ms", "rows"],
                rows: timings.map {
                    [
                        .text($0.name), .decimal(SVGChart.format($0.medianMilliseconds, digits: 2)),
                        .decimal(SVGChart.format($0.minMilliseconds, digits: 2)), .int($0.rows),
                    ]
                }))
    }

    private static func newestDay(_ connection: Connection, app: String) throws(ReportError) -> ReportDay {
        do {
            let sql: SQL = """
                SELECT coalesce(max(day), (now() AT TIME ZONE 'UTC')::date)::text AS day
                FROM report_link_daily WHERE app_id = \(app)
                """
            return try ReportService.day(try connection.query(sql)[0], "day")
        } catch let error as ReportError {
            throw error
        } catch {
            throw .database(message: "\(error)")
        }
    }
}
