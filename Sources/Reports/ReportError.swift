/// Why a report could not be produced. `description` is safe to show to a user or an API client,
/// except `.database`'s, which carries PostgreSQL's text: the CLI prints it to its operator, and the
/// report API answers a generic message and logs it (`reports.query_failed`).
package enum ReportError: Error, Equatable, CustomStringConvertible {
    /// A request parameter is missing or malformed (`name` is the parameter, e.g. `from`).
    case invalidParameter(name: String, message: String)
    /// The app does not exist.
    case unknownApp(String)
    /// Day `day` of `app` is not completely loaded: the logs of `nodesBehind` are not loaded
    /// through `requiredWatermark` (end of the day in the app's time zone plus the grace period);
    /// `watermark` is the newest `received_at` loaded (ISO 8601, nil before any load).
    case dayNotComplete(
        app: String, day: ReportDay, watermark: String?, requiredWatermark: String, nodesBehind: [String])
    /// The app has rollup work queued (`queue_rollups`) that `process_rollups()` has not applied yet.
    case rollupsPending(app: String, days: Int)
    /// PostgreSQL does not know the app's time zone (`apps.time_zone`, a name gone from the system's
    /// tzdata since the app was set up): its days cannot be told, and its rollups are held (sql/079).
    case unknownTimeZone(app: String, timeZone: String)
    /// PostgreSQL failed; `message` is the server's or the client library's message.
    case database(message: String)
    /// Writing an output file failed.
    case io(path: String, message: String)

    /// The process exit status the CLI uses for this error (sysexits.h values, so cron wrappers can
    /// tell "try again later" (75) from a mistake in the command line (64)).
    package var exitCode: Int32 {
        switch self {
        case .invalidParameter, .unknownApp: return 64  // EX_USAGE
        case .dayNotComplete, .rollupsPending: return 75  // EX_TEMPFAIL
        case .unknownTimeZone: return 78  // EX_CONFIG
        case .database: return 69  // EX_UNAVAILABLE
        case .io: return 74  // EX_IOERR
        }
    }

    /// The HTTP status the report API answers with.
    package var httpStatus: Int {
        switch self {
        case .invalidParameter: return 400
        case .unknownApp: return 404
        case .dayNotComplete, .rollupsPending, .unknownTimeZone: return 409
        case .database: return 503
        case .io: return 500
        }
    }

    /// A stable machine-readable code for API clients.
    package var code: String {
        switch self {
        case .invalidParameter: return "invalid_parameter"
        case .unknownApp: return "unknown_app"
        case .dayNotComplete: return "day_not_complete"
        case .rollupsPending: return "rollups_pending"
        case .unknownTimeZone: return "unknown_time_zone"
        case .database: return "database_unavailable"
        case .io: return "io_error"
        }
    }

    /// `description` in the command line's words: a parameter by its flag (`--app is required`,
    /// `--from: ...`), where the API's name a query parameter (`invalid parameter app: required`).
    package var commandLineDescription: String {
        guard case .invalidParameter(let name, let message) = self else { return description }
        return message == "required" ? "--\(name) is required" : "--\(name): \(message)"
    }

    package var description: String {
        switch self {
        case .invalidParameter(let name, let message):
            return "invalid parameter \(name): \(message)"
        case .unknownApp(let app):
            return "unknown app \(app)"
        case .dayNotComplete(let app, let day, let watermark, let required, let behind):
            guard let watermark else {
                return "day \(day) of app \(app) is not completely loaded yet: nothing is loaded; run again later or "
                    + "pass --allow-partial"
            }
            let nodes = behind.isEmpty ? "" : " (not yet: \(behind.joined(separator: ", ")))"
            return "day \(day) of app \(app) is not completely loaded yet: every node's log must be loaded through "
                + "\(required) (end of the day in the app's time zone plus the grace period)\(nodes); a node gets "
                + "there once an event it received after that is loaded, or once the aggregator reads its log to "
                + "its end after that (the newest loaded is \(watermark)); run again later or pass --allow-partial "
                + "(a node renamed, retired, or crashed and left down holds every day back until its row in "
                + "load_checkpoints is deleted)"
        case .rollupsPending(let app, let days):
            return "app \(app) has rollup work for \(days) day(s) queued and not processed yet; run process_rollups() "
                + "(the aggregator does it on its timer) or pass --allow-partial"
        case .unknownTimeZone(let app, let timeZone):
            return "app \(app)'s time zone \"\(timeZone)\" is not known to PostgreSQL (gone from the system's"
                + " tzdata?), so its days cannot be told and its rollups are held: install the zone (e.g."
                + " tzdata-legacy) and restart PostgreSQL, or `apps update --id \(app) --time-zone ZONE`"
        case .database(let message):
            return "database error: \(message)"
        case .io(let path, let message):
            return "cannot write \(path): \(message)"
        }
    }
}
