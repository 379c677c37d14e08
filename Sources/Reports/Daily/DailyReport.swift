import Foundation
package import Postgres

/// The daily report job (`detour-analytics report daily`, run from cron): for one date and one app
/// (or every app) it writes `<out>/<date>/<app>/` with the day's reports as CSV, JSON and a
/// self-contained HTML page.
///
/// - Completeness: day D of an app is complete when the load watermark (the newest `received_at`
///   loaded, from `load_checkpoints`), or else `loaded_through` (every node's log read to its end
///   after it, as after a quiet night; sql/063), is at or after the end of D in the app's time zone
///   plus `graceSeconds` (default 600), and no rollup work of the app is queued unprocessed. Each
///   app is decided on its own: an app whose day is incomplete is refused with
///   `ReportError.dayNotComplete` (or `.rollupsPending`) and nothing of it is written, while the
///   complete apps are written; unless `allowPartial`, in which case every app is written and the
///   files of an incomplete day say `complete: false`. Any refusal makes the CLI exit 75.
/// - Idempotent: the files depend only on the data and the watermark (no generation time inside),
///   and each is written to a temporary file in the same directory and renamed over the old one,
///   so a reader never sees a half-written file and a rerun replaces the previous output. A run
///   killed mid-write leaves its temporary file; the next run removes it once an hour old
///   (`removeAbandonedTemporaryFiles`).
package struct DailyReport {
    /// Default grace period after the end of the day, in seconds.
    package static let defaultGraceSeconds = 600
    /// Days of install cohorts shown in the retention section (ending at the report date).
    package static let retentionDays = 31

    /// The connection (the writer role or the analyst role).
    package let connection: Connection
    /// Seconds after the end of the day the watermark must reach.
    package let graceSeconds: Int

    /// Makes the job.
    package init(connection: Connection, graceSeconds: Int = DailyReport.defaultGraceSeconds) {
        self.connection = connection
        self.graceSeconds = graceSeconds
    }

    /// Writes the report of `date` for `app` (every app when nil) under `outDirectory`.
    ///
    /// Each app is decided on its own: every app whose day is complete (every app with
    /// `allowPartial`) is written, and every other app is refused (`DailyReportRun.refusals`)
    /// without writing anything of it. Before 2026-12 the first incomplete app refused the whole
    /// run, so one app in a time zone behind the crontab's window (America/Los_Angeles completes at
    /// 08:10Z) kept every app from ever getting its report.
    ///
    /// - Parameters:
    ///   - date: the day, in each app's reporting time zone.
    ///   - app: one app id, or nil for every app.
    ///   - outDirectory: the root; `<out>/<date>/<app>/` is created as needed.
    ///   - formats: which files to write (`csv`: one CSV per section, `json`: `report.json`,
    ///     `html`: `report.html`).
    ///   - allowPartial: write even when the day is not completely loaded (the output says so).
    /// - Returns: what was written and what was refused, each in app order; a PostgreSQL failure
    ///   after the list of apps stops the run, and is returned with what came before it (`failure`).
    /// - Throws: `.unknownApp`, or `.database` for the list of apps.
    package func run(
        date: ReportDay, app: String?, outDirectory: String, formats: Set<DailyReportFormat>, allowPartial: Bool
    ) throws(ReportError) -> DailyReportRun {
        var result = DailyReportRun(outputs: [], refusals: [])
        result.removedTemporaryFiles = Self.removeAbandonedTemporaryFiles(outDirectory: outDirectory)
        let ids = try appIDs(app)
        for (index, id) in ids.enumerated() {
            do throws(ReportError) {
                switch try decide(app: id, date: date, outDirectory: outDirectory, allowPartial: allowPartial) {
                case .refuse(let refusal):
                    result.refusals.append(refusal)
                case .write(let status):
                    result.outputs.append(
                        try write(app: id, date: date, status: status, outDirectory: outDirectory, formats: formats))
                }
            } catch .io(let path, let message) {
                // That app's files could not be written (a full disk, a path that is a file): the
                // apps after it are still tried. Until 2026-12-05 this ended the run, and the apps
                // written and refused before it went unreported, with 74 in place of a refusal's 75.
                result.refusals.append(.io(path: path, message: message))
            } catch {
                // PostgreSQL failed: the apps after this one are not tried (each would fail alike),
                // and what was written and refused before it is still reported.
                result.failure = error
                result.untried = Array(ids[(index + 1)...])
                return result
            }
        }
        return result
    }

    /// What the job does with one app.
    private enum Decision {
        /// Write its files; the day's completeness.
        case write(Completeness)
        /// Write nothing of it, for this reason.
        case refuse(ReportError)
    }

    /// Whether `id`'s files for `date` are written, or why not.
    ///
    /// - Throws: `ReportError.database`.
    private func decide(
        app id: String, date: ReportDay, outDirectory: String, allowPartial: Bool
    ) throws(ReportError) -> Decision {
        // The schema's pattern admits `.` and `..` (apps create refuses them since 2026-12-02);
        // `<out>/<date>/..` is `<out>`, where such an app's files landed.
        guard id != ".", id != ".." else {
            return .refuse(
                .io(path: outDirectory + "/" + date.iso8601 + "/" + id, message: "app id \(id) names no directory"))
        }
        let status = try completeness(app: id, date: date)
        // Its days cannot be told, with --allow-partial either; the apps after it are still
        // written (until 2026-12-05 the failing query ended the run there, exit 69).
        if let zone = status.unknownTimeZone {
            return .refuse(.unknownTimeZone(app: id, timeZone: zone))
        }
        if !status.isComplete && !allowPartial {
            return .refuse(
                status.pendingDays > 0
                    ? .rollupsPending(app: id, days: status.pendingDays)
                    : .dayNotComplete(
                        app: id, day: date, watermark: status.watermark, requiredWatermark: status.required,
                        nodesBehind: status.nodesBehind))
        }
        return .write(status)
    }

    /// Removes the temporary files an interrupted run (killed, a container stopped) left in any
    /// `<out>/<date>/<app>/`, not only the directories this run writes: the next run is usually for
    /// the next date. Only `AtomicFile.write`'s names, only once unmodified for
    /// `AtomicFile.abandonedAfter` (an hour), so the files of a run writing at this moment, here or
    /// in another container, are left alone. One directory read per date and app.
    ///
    /// - Returns: the paths removed.
    static func removeAbandonedTemporaryFiles(outDirectory: String) -> [String] {
        let fileManager = FileManager.default
        var removed: [String] = []
        for date in (try? fileManager.contentsOfDirectory(atPath: outDirectory)) ?? []
        where ReportDay(iso8601: date) != nil {
            let directory = outDirectory + "/" + date
            for app in (try? fileManager.contentsOfDirectory(atPath: directory)) ?? [] {
                removed += AtomicFile.removeAbandoned(in: directory + "/" + app)
            }
        }
        return removed.sorted()
    }

    /// Writes one app's files for `date` (each atomically).
    private func write(
        app id: String, date: ReportDay, status: Completeness, outDirectory: String, formats: Set<DailyReportFormat>
    ) throws(ReportError) -> DailyReportOutput {
        let content = try DailyReportContent.load(
            connection: connection, app: id, date: date, isComplete: status.isComplete,
            requiredWatermark: status.required)
        let directory = outDirectory + "/" + date.iso8601 + "/" + id
        var files: [String] = []
        try AtomicFile.makeDirectories(directory)
        for format in DailyReportFormat.allCases where formats.contains(format) {
            for (name, text) in content.files(format) {
                let path = directory + "/" + name
                try AtomicFile.write(text, to: path)
                files.append(path)
            }
        }
        return DailyReportOutput(
            app: id, directory: directory, files: files, isComplete: status.isComplete, watermark: content.watermark)
    }

    /// Whether day `date` of `app` is completely loaded, with the watermark and what it must reach.
    ///
    /// - Throws: `ReportError.database`.
    package func completeness(app: String, date: ReportDay) throws(ReportError) -> Completeness {
        do {
            let row = try connection.query(ReportSQL.completeness(app: app, day: date, graceSeconds: graceSeconds))
                .first
            let pending = try row?["pending_days", as: Int.self] ?? 0
            let behind = try row?["behind", as: String.self] ?? ""
            return Completeness(
                isComplete: (try row?["complete", as: Bool.self] ?? false) && pending == 0,
                watermark: try row?["watermark", as: String?.self] ?? nil,
                required: try row?["required", as: String.self] ?? "", pendingDays: pending,
                nodesBehind: behind.isEmpty ? [] : behind.split(separator: "\n").map(String.init),
                unknownTimeZone: try row?["unknown_time_zone", as: String?.self] ?? nil)
        } catch {
            throw .database(message: "\(error)")
        }
    }

    private func appIDs(_ app: String?) throws(ReportError) -> [String] {
        do {
            let all = try connection.query(ReportSQL.apps).map { try $0["id", as: String.self] }
            guard let app else { return all }
            guard all.contains(app) else { throw ReportError.unknownApp(app) }
            return [app]
        } catch let error as ReportError {
            throw error
        } catch {
            throw .database(message: "\(error)")
        }
    }

    /// The completeness of one app's day.
    package struct Completeness: Sendable, Equatable {
        /// Every node's log is loaded through `required` (`loaded_through`), and no rollup work is
        /// pending.
        package var isComplete: Bool
        /// The load watermark (ISO 8601 UTC), nil before any load.
        package var watermark: String?
        /// End of the day in the app's time zone plus the grace period (ISO 8601 UTC).
        package var required: String
        /// Rollup days of the app queued and not processed yet (any makes the day incomplete).
        package var pendingDays: Int
        /// The nodes whose logs are not loaded through `required` yet, by name.
        package var nodesBehind: [String] = []
        /// The app's time zone when PostgreSQL does not know it (the day cannot be told), else nil.
        package var unknownTimeZone: String? = nil
    }
}

/// A daily report output format.
package enum DailyReportFormat: String, Sendable, CaseIterable {
    /// One CSV per section: links.csv, utm.csv, attribution.csv, installs.csv, funnel.csv, retention.csv.
    case csv
    /// report.json: every section plus date, app, watermark and completeness.
    case json
    /// report.html: self-contained page with inline SVG charts and the tables.
    case html

    /// Parses `csv,json,html` (any subset, any order).
    ///
    /// - Throws: `ReportError.invalidParameter(name: "format", ...)`.
    package static func parseList(_ text: String) throws(ReportError) -> Set<DailyReportFormat> {
        var formats: Set<DailyReportFormat> = []
        for part in text.split(separator: ",") {
            let name = part.trimmingCharacters(in: .whitespaces).lowercased()
            guard let format = DailyReportFormat(rawValue: name) else {
                throw .invalidParameter(name: "format", message: "expected a list of csv, json, html; got \(name)")
            }
            formats.insert(format)
        }
        guard !formats.isEmpty else { throw .invalidParameter(name: "format", message: "empty list") }
        return formats
    }
}

/// What one run of the daily job did: the apps written and the apps refused.
package struct DailyReportRun: Sendable, Equatable {
    /// The apps written, in app order.
    package var outputs: [DailyReportOutput]
    /// The apps not written because their day is not complete yet (`.dayNotComplete` or
    /// `.rollupsPending`), because PostgreSQL does not know their time zone (`.unknownTimeZone`), or
    /// because their files could not be written or their id (`.`, `..`) names no directory (`.io`),
    /// in app order.
    package var refusals: [ReportError]
    /// Temporary files an interrupted run had left under the output directory, removed by this one.
    package var removedTemporaryFiles: [String] = []
    /// The PostgreSQL failure that stopped the run (`.database`), nil when every app was tried.
    package var failure: ReportError?
    /// The apps after the failure, not tried, in app order.
    package var untried: [String] = []

    /// A run's result so far.
    package init(outputs: [DailyReportOutput], refusals: [ReportError]) {
        self.outputs = outputs
        self.refusals = refusals
    }

    /// The CLI's exit status: 0 when every app was written, 75 (EX_TEMPFAIL, so cron tries again)
    /// when any app was refused for its day, whatever else happened (a retry writes that app; until
    /// 2026-12-05 an unknown zone's 78, or a write failure's 74, hid it); else 69 when PostgreSQL
    /// failed (a retry tries the apps not tried); else 78 when an app's time zone is unknown; else
    /// 74 when an app's files could not be written (or its id names no directory).
    package var exitCode: Int32 {
        let codes = refusals.map(\.exitCode) + (failure.map { [$0.exitCode] } ?? [])
        return [75, 69, 78, 74].first(where: codes.contains) ?? codes.max() ?? 0
    }
}

/// What the daily job wrote for one app.
package struct DailyReportOutput: Sendable, Equatable {
    /// The app.
    package var app: String
    /// `<out>/<date>/<app>`.
    package var directory: String
    /// Paths of the files written.
    package var files: [String]
    /// False when written with allowPartial for an incompletely loaded day.
    package var isComplete: Bool
    /// The watermark the numbers were computed at.
    package var watermark: String?
}
