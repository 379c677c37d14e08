/// One cell of a rendered report.
package enum ReportValue: Sendable, Equatable {
    /// A count.
    case int(Int)
    /// An exact decimal as PostgreSQL printed it (`29.99`, `0.333333`): never a binary float, so
    /// revenue stays exact to the cent.
    case decimal(String)
    /// Text (a path, a day, a name).
    case text(String)
    /// No value (a rate with a zero denominator, a retention day not reached yet).
    case null
    /// Named values (events per name, revenue per currency): a JSON object; `name=value` pairs
    /// separated by spaces, sorted by name, in CSV and the terminal table.
    case map([String: ReportValue])

    /// The value as plain text (`""` for null): what CSV and the terminal table show.
    package var plainText: String {
        switch self {
        case .int(let value): return String(value)
        case .decimal(let value): return value
        case .text(let value): return value
        case .null: return ""
        case .map(let entries):
            return entries.keys.sorted().map { "\($0)=\(entries[$0]!.plainText)" }.joined(separator: " ")
        }
    }

    /// An optional count.
    package static func int(_ value: Int?) -> ReportValue { value.map { .int($0) } ?? .null }
    /// An optional exact decimal.
    package static func decimal(_ value: String?) -> ReportValue { value.map { .decimal($0) } ?? .null }
    /// Optional text.
    package static func text(_ value: String?) -> ReportValue { value.map { .text($0) } ?? .null }
}

/// A report section as a table: what the renderers (terminal table, CSV, JSON) consume.
package struct ReportTable: Sendable, Equatable {
    /// Section name, e.g. `links`, `link_events`, `revenue`.
    package var name: String
    /// Column names, snake_case, as in the SQL views.
    package var columns: [String]
    /// Rows; each has exactly `columns.count` values.
    package var rows: [[ReportValue]]

    /// Makes a table.
    package init(name: String, columns: [String], rows: [[ReportValue]]) {
        self.name = name
        self.columns = columns
        self.rows = rows
    }
}

/// A report that can be rendered: its identity, the watermark it was computed at, and its tables.
package protocol RenderableReport: Sendable {
    /// `links`, `funnel`, `retention` or `attribution`.
    var kind: String { get }
    /// The app.
    var app: String { get }
    /// First day (inclusive).
    var from: ReportDay { get }
    /// Last day (inclusive).
    var to: ReportDay { get }
    /// The load watermark the numbers were computed at (ISO 8601 UTC), nil before any load.
    var watermark: String? { get }
    /// The report's sections.
    var tables: [ReportTable] { get }
}
