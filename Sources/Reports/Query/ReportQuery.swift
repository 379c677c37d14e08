/// The parameters of an interactive report, shared by the CLI (`--app --from --to --format`) and
/// the HTTP API (`?app=&from=&to=&format=`), parsed and validated in one place.
package struct ReportQuery: Sendable, Equatable {
    /// Longest range a query may span, in days (a limit on the work one request can cause).
    package static let maxDays = 366
    /// Days covered when `from` is omitted (ending at `to`).
    package static let defaultDays = 30

    /// The app.
    package var app: String
    /// First day (inclusive), in the app's time zone.
    package var from: ReportDay
    /// Last day (inclusive).
    package var to: ReportDay
    /// Output format.
    package var format: ReportFormat
    /// One link's path (exactly as the link service sent it), nil for every link.
    package var path: String?
    /// One table of the report (`utm`, `installs`...), nil for all (CSV: the main one). Checked
    /// against the report's tables by `ReportService.report(_:_:)`.
    package var table: String?
    /// `link`: the per-link report's rows totalled per link over the days (`LinkTotalsReport`);
    /// nil (or `day`): one row per day.
    package var by: String?

    /// Longest `path` accepted, in bytes.
    package static let maxPathBytes = 2048

    /// Makes a query.
    package init(
        app: String, from: ReportDay, to: ReportDay, format: ReportFormat, path: String? = nil, table: String? = nil,
        by: String? = nil
    ) {
        self.app = app
        self.from = from
        self.to = to
        self.format = format
        self.path = path
        self.table = table
        self.by = by
    }

    /// Parses parameters by name: `app` (required), `from` and `to` (`YYYY-MM-DD`; `to` defaults to
    /// `today`, `from` to 29 days before `to`), `format` (`table`, `csv`, `json`; default
    /// `defaultFormat`), `path` (one link, exactly as stored; rows of other links and the organic
    /// "link" are left out), `table` (one of the report's tables, e.g. `utm`: every format shows only
    /// it), `by` (`day`, the default, or `link`: the per-link report's totals per link over the
    /// days). Unknown names are refused so a typo is not silently ignored.
    ///
    /// - Parameters:
    ///   - parameters: the flags (without `--`) or query parameters.
    ///   - today: the day `to` defaults to (the caller's notion of today).
    ///   - defaultFormat: `.table` for the CLI, `.json` for the API.
    ///   - allowed: further parameter names the caller handles itself (e.g. `date`, `out`).
    /// - Throws: `ReportError.invalidParameter` naming the offending parameter.
    package static func parse(
        _ parameters: [String: String], today: ReportDay, defaultFormat: ReportFormat, allowed: Set<String> = []
    ) throws(ReportError) -> ReportQuery {
        let known: Set<String> = ["app", "from", "to", "format", "path", "table", "by"]
        if let unknown = parameters.keys.sorted().first(where: { !known.contains($0) && !allowed.contains($0) }) {
            throw .invalidParameter(
                name: unknown, message: "unknown parameter (expected app, from, to, format, path, table, by)")
        }
        guard let app = parameters["app"], !app.isEmpty else {
            throw .invalidParameter(name: "app", message: "required")
        }
        guard app.utf8.count <= 64,
            app.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            })
        else {
            throw .invalidParameter(name: "app", message: "must match [A-Za-z0-9_.-]{1,64}")
        }
        let to = try day(parameters["to"], name: "to") ?? today
        // The default range stops at 0001-01-01, the first day a query can name: 29 days before
        // an early `to` would be in year 0, which PostgreSQL's dates refuse (the query failed, 503).
        let from =
            try day(parameters["from"], name: "from") ?? max(to.adding(days: -(defaultDays - 1)), ReportDay.first)
        guard from <= to else {
            throw .invalidParameter(name: "from", message: "\(from) is after to (\(to))")
        }
        guard from.days(to: to) < maxDays else {
            throw .invalidParameter(name: "to", message: "the range spans more than \(maxDays) days")
        }
        var format = defaultFormat
        if let text = parameters["format"] {
            guard let parsed = ReportFormat(rawValue: text.lowercased()) else {
                throw .invalidParameter(name: "format", message: "expected table, csv or json, got \(text)")
            }
            format = parsed
        }
        let path = parameters["path"]
        if let path {
            guard !path.isEmpty, path.utf8.count <= maxPathBytes else {
                throw .invalidParameter(name: "path", message: "expected a link path of 1 to \(maxPathBytes) bytes")
            }
        }
        var by = parameters["by"]
        if let text = by {
            guard ["day", "link"].contains(text) else {
                throw .invalidParameter(name: "by", message: "expected day or link, got \(text.prefix(40))")
            }
            if text == "day" { by = nil }
        }
        return ReportQuery(
            app: app, from: from, to: to, format: format, path: path, table: parameters["table"], by: by)
    }

    /// Parses one `YYYY-MM-DD` parameter (nil when absent).
    package static func day(_ text: String?, name: String) throws(ReportError) -> ReportDay? {
        guard let text else { return nil }
        guard let day = ReportDay(iso8601: text) else {
            throw .invalidParameter(name: name, message: "expected a date YYYY-MM-DD, got \(text)")
        }
        return day
    }
}
