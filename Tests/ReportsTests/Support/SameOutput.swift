import Reports
import TestSupport
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
        // The API's body, written by two threads when it is four pieces or more, as by one.
        for writers in [1, 2] {
            let read = readBody(ReportJSONPieces(lines, pieceSize: size, writers: writers), readSize: 1000)
            #expect(
                read == whole + [UInt8(ascii: "\n")],
                "the body in pieces of \(size) B, \(writers) writers, of \(context)", sourceLocation: sourceLocation)
        }
    }
}

/// Stores each of `broken` in place of a good stored summary line (`store`), and expects the report
/// as served (`served`) and the rows' read (`rows`) both to refuse it with `ReportError.database`
/// naming `source`; then stores `good` back. Each broken line must differ from the good one.
func expectRefused<Line: Equatable>(
    _ broken: [Line], good: Line, store: (Line) throws -> Void, source: String,
    served: () throws -> any RenderableReport, rows: () throws -> any RenderableReport,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    for bad in broken {
        #expect(bad != good, sourceLocation: sourceLocation)
        try store(bad)
        let error = #expect(throws: ReportError.self, "\(bad)", sourceLocation: sourceLocation) { try served() }
        guard case .database(let message)? = error else {
            Issue.record("\(String(describing: error))", sourceLocation: sourceLocation)
            continue
        }
        #expect(message.contains(source), "\(message)", sourceLocation: sourceLocation)
        #expect(throws: ReportError.self, "the rows of \(bad)", sourceLocation: sourceLocation) { try rows() }
    }
    try store(good)
}

/// Everything a report body hands out, read in calls of `readSize` bytes.
func readBody(_ body: ReportJSONPieces, readSize: Int = 4096) -> [UInt8] {
    drain(readSize: readSize) { body.read(into: $0) }
}
