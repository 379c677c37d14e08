/// How an interactive report is written.
package enum ReportFormat: String, Sendable, CaseIterable {
    /// Aligned columns for a terminal.
    case table
    /// RFC 4180 CSV of the report's main table.
    case csv
    /// JSON with the watermark (the API's format).
    case json
}
