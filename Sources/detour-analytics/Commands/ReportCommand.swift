import Foundation
import Postgres
import Reports

/// `detour-analytics report`: the reports at a terminal, the daily job for cron, and rebuilds.
enum ReportCommand: Command {
    static let name = "report"
    static let summary = "per-link, funnel, retention and attribution reports; the daily report job"
    static let help = """
        Usage:
          detour-analytics report links|funnel|retention|attribution --app ID [--from D] [--to D] [--path P]
                                                             [--by day|link] [--table T] [--format table|csv|json]
          detour-analytics report daily --date D [--app ID] --out DIR [--format csv,json,html] [--allow-partial] [--grace DUR]
          detour-analytics report rebuild

        links        per link and day: clicks, universal-link opens, matched and attributed installs, install
                     rate, re-engagements, events and revenue per currency, split by platform
        funnel       click → install → app_open → sign_up → purchase (and app-defined funnels) per cohort day
        retention    D1, D3, D7, D14, D30 per install cohort, per link and organic (null until reached)
        attribution  installs (matched, attributed, organic, unattributable), actions and revenue of attributed
                     devices by install date and by event date, last-touch opens
        daily        writes <DIR>/<D>/<app>/ (report.html with inline SVG charts, report.json, CSVs) for cron;
                     idempotent; each app on its own: writes every app whose day D is completely loaded
                     (everything received before the end of D in the app's time zone plus --grace, default
                     10m), refuses the others without writing them, and exits 75 if it refused any (so cron
                     tries again), unless --allow-partial, which writes every app and the output then states
                     it; first removes the temporary files (<file>.tmp-PID-...) a killed run left under <DIR>
                     once nothing has modified them for an hour
        rebuild      recomputes every rollup from the raw tables (after changing an app's settings or funnels)

        Options:
          --app ID             the app (required except for daily, which defaults to every app)
          --from D, --to D     dates YYYY-MM-DD in the app's reporting time zone (default: the last 30 days,
                               ending today in that time zone)
          --path P             one link only, by its path exactly as stored (e.g. /promo); the organic rows
                               are left out, and attribution's installs per day stay app-wide
          --by link            links only: one row per link (and UTM combination) with the days' totals, instead
                               of one per day (re-engagements are summed per day)
          --table T            one table of the report only: utm of links, installs of attribution, or the
                               main one (CSV shows the main one unless told)
          --format F           table (default), csv or json; for daily a list of csv,json,html (default all)
          --date D             the day for daily
          --out DIR            output root for daily
        \(databaseHelp)

        Exit status: 0 done, 64 bad usage, 69 database unavailable, 74 write failed, 75 day not complete yet
        (for daily: for at least one app; the complete apps were written; 75 wins over 78 and 74, as a
        retry writes that app), 78 PostgreSQL does not know the app's time zone (for daily: of at least
        one app; the others were written). report daily over a database with no apps says so on stderr.
        """

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        guard let verb = arguments.popPositional() else {
            throw UsageError(description: "expected links, funnel, retention, attribution, daily or rebuild")
        }
        switch verb {
        case "links", "funnel", "retention", "attribution":
            var parameters: [String: String] = [:]
            for name in ["app", "from", "to", "path", "by", "table", "format"] {
                if let value = try arguments.option("--" + name) { parameters[name] = value }
            }
            let url = try arguments.databaseURL(environment)
            try arguments.finish()
            return try withDatabase(url) { connection in
                let response = ReportEndpoint.respond(
                    kind: verb, parameters: parameters, connection: connection, defaultFormat: .table)
                if response.exitCode == 0 {
                    // JSON and the terminal table state the watermark; a CSV's rows have no place for
                    // it, and scripts parse standard output, so it goes to standard error.
                    if response.contentType == ReportEndpoint.contentType(.csv) {
                        complain("report: load watermark \(response.watermark ?? "none (nothing loaded yet)")\n")
                    }
                    // A JSON report is written in pieces as it is made (a 30-day per-link report at
                    // 1,000 links is ~54 MB), never whole in memory.
                    do {
                        try response.write { try writeAll(STDOUT_FILENO, $0) }
                    } catch {
                        complain("error: writing the report: \(error)\n")
                        return 74
                    }
                } else {
                    // In the command line's words, never the API's JSON body: until 2026-12-02
                    // `--format json` put `{"error":...}` on standard error, and every report said
                    // `invalid parameter app: required` for a missing --app.
                    complain("error: \(response.error?.commandLineDescription ?? response.body)\n")
                }
                return response.exitCode
            }
        case "daily":
            return try daily(&arguments, environment: environment)
        case "rebuild":
            let url = try arguments.databaseURL(environment)
            try arguments.finish()
            return try withDatabase(url) { connection in
                do throws(ReportError) {
                    try ReportService(connection: connection).rebuild()
                } catch {
                    complain("error: \(error.description)\n")
                    return error.exitCode
                }
                say("report: every rollup rebuilt from the raw tables")
                return 0
            }
        default:
            throw UsageError(description: "unknown report \(verb)")
        }
    }

    static func daily(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let dateText = try arguments.required("--date")
        guard let date = ReportDay(iso8601: dateText) else {
            throw UsageError(description: "--date must be YYYY-MM-DD")
        }
        let app = try arguments.option("--app")
        let out = try arguments.required("--out")
        let formats = try dailyFormats(try arguments.option("--format"))
        let allowPartial = arguments.flag("--allow-partial")
        let grace = try arguments.option("--grace").map { try parseDuration($0, flag: "--grace") }
        let url = try arguments.databaseURL(environment)
        try arguments.finish()
        return try withDatabase(url) { connection in
            daily(
                date: date, app: app, out: out, formats: formats, allowPartial: allowPartial, grace: grace,
                connection: connection)
        }
    }

    /// The daily job's `--format` list (default every format). A malformed list (`pdf`, or empty) is
    /// a usage error, exit status 64 as docs/cron.md says; thrown as the `ReportError` it was, it
    /// reached the generic handler and exited 1.
    static func dailyFormats(_ text: String?) throws -> Set<DailyReportFormat> {
        do {
            return try DailyReportFormat.parseList(text ?? "csv,json,html")
        } catch {
            throw UsageError(description: error.commandLineDescription)
        }
    }

    /// Opens the database for a report command and runs `body` with it. PostgreSQL that cannot be
    /// reached is exit status 69 (EX_UNAVAILABLE) with one clear line, as for a failure inside a
    /// report, so a cron job can tell "try again later" from a bad invocation (64).
    static func withDatabase(_ url: String?, _ body: (Connection) throws -> Int32) throws -> Int32 {
        let address = try requireDatabase(url)
        let connection: Connection
        do {
            connection = try Connection(url: address)
        } catch {
            return databaseUnavailable(ReportError.database(message: "\(error)").description)
        }
        defer { connection.close() }
        return try body(connection)
    }

    /// The daily job on an open connection: folds queued rollup work in, writes the files; its exit status.
    static func daily(
        date: ReportDay, app: String?, out: String, formats: Set<DailyReportFormat>, allowPartial: Bool,
        grace: Duration?, connection: Connection
    ) -> Int32 {
        do {
            // Queued rollup work (from the aggregator's load cycles) is folded in first, so a complete
            // day is never refused for work the writer could do now.
            _ = try ReportService(connection: connection).processPending()
            let job = DailyReport(
                connection: connection,
                graceSeconds: grace.map { Int($0.components.seconds) } ?? DailyReport.defaultGraceSeconds)
            // Each app on its own: the complete ones are written, the others refused (75, so cron retries).
            let run = try job.run(
                date: date, app: app, outDirectory: out, formats: formats, allowPartial: allowPartial)
            if let first = run.removedTemporaryFiles.first {
                let count = run.removedTemporaryFiles.count
                say(
                    "report daily: removed \(count) temporary file\(count == 1 ? "" : "s") an interrupted run left"
                        + " (\(first)\(count > 1 ? ", ..." : ""))")
            }
            for output in run.outputs {
                say("report daily: \(output.app) → \(output.directory) (\(output.files.joined(separator: ", ")))")
            }
            for refusal in run.refusals {
                complain("error: \(refusal.description)\n")
            }
            if let failure = run.failure {
                complain("error: \(failure.description)\n")
                if !run.untried.isEmpty {
                    complain("report daily: not tried after that failure: \(run.untried.joined(separator: ", "))\n")
                }
            }
            // A database with no apps (a fresh install, or DATABASE_URL naming another database)
            // wrote nothing and said nothing, exit 0 (until 2026-12-05).
            if app == nil, run.outputs.isEmpty, run.refusals.isEmpty, run.failure == nil {
                complain(
                    "report daily: warning: the database has no apps, nothing was written (is DATABASE_URL the"
                        + " pipeline's database?)\n")
            }
            return run.exitCode
        } catch {
            complain("error: \(error.description)\n")
            return error.exitCode
        }
    }

}
