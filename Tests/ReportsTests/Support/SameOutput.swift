import Reports
import Testing

/// Expects `lines` (a report written from its stored lines, as served) to print exactly as `rows`
/// (the same report decoded into rows): the JSON, the CSV and the terminal table, each table's rows
/// as the other formats collect them, and the JSON streamed in pieces of any size, as the API and
/// the CLI write it.
func expectSameOutput(
    _ lines: any RenderableReport, as rows: any RenderableReport, _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    for format in [ReportFormat.json, .csv, .table] {
        let expected = ReportRenderer.render(rows, as: format)
        let actual = ReportRenderer.render(lines, as: format)
        #expect(actual == expected, "\(format) of \(context)", sourceLocation: sourceLocation)
    }
    #expect(lines.tables.count == rows.tables.count, sourceLocation: sourceLocation)
    for (table, expected) in zip(lines.tables, rows.tables) {
        #expect(table.count == expected.count && table.columns == expected.columns, sourceLocation: sourceLocation)
        #expect(table.rows == expected.rows, "\(table.name) of \(context)", sourceLocation: sourceLocation)
    }
    let whole = ReportJSON.bytes(rows)
    for size in [1, 100, 4096] {
        var stream = ReportJSONStream(lines)
        var pieces: [UInt8] = []
        stream.forEachPiece(of: size) { pieces += $0.bytes }
        #expect(pieces == whole, "pieces of \(size) B of \(context)", sourceLocation: sourceLocation)
    }
}
