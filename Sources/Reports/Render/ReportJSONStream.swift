package import JSONText

/// A report's JSON (`ReportJSON`'s format) written a piece at a time: what the API sends and
/// `report <kind> --format json` prints. A 30-day per-link report at 1,000 links is ~54 MB of JSON;
/// written whole it was a buffer of that size, grown by doubling (and, for the API, copied again
/// into the HTTP response). The CLI writes each piece to its output and reuses the buffer; the API's
/// report worker writes 1 MiB pieces that are freed as they are sent (`ReportJSONPieces`).
///
/// A value: a copy starts from where the original was, so a stream can be written twice (the tests
/// compare a streamed body with the whole one). Writing cannot fail: the report is complete before
/// the first byte, so the status is known.
package struct ReportJSONStream: Sendable {
    /// The report's tables (read by `ReportJSONChunks` to split them into chunks of rows).
    let tables: [ReportTable]
    /// `{"report":...,"tables":{`, until it is written.
    private var head: JSONText?
    private let newline: Bool
    /// The table being written, and its next row (-1 before its `"name":[`).
    private var table = 0
    private var row = -1
    /// The table's column names as JSON keys, encoded once per table.
    private var keys: JSONKeys = .none
    private var isFinished = false
    /// Where a part of the text (`part(from:to:)`) ends: before that table's row (`row` 0 after its
    /// `"name":[`, `count` before its `]`); nil for the end of the text.
    private var stop: Position?

    /// A place in the text between rows: before row `row` of table `table` (0 after the table's
    /// `"name":[`, its row count before its `]`); `table` == the table count is before the final `}}`.
    struct Position: Equatable {
        var table: Int
        var row: Int
    }

    /// A stream of `report`'s JSON; `extra` members (already JSON-encoded values) follow
    /// `watermark`; `newline` ends the text with a line feed (what the API and the CLI send).
    package init(_ report: any RenderableReport, extra: [(String, String)] = [], newline: Bool = false) {
        tables = report.tables
        self.newline = newline
        var out = JSONText(capacity: 256)
        out.raw("{\"report\":")
        out.string(report.kind)
        out.raw(",\"app\":")
        out.string(report.app)
        out.raw(",\"from\":")
        out.string(report.from.iso8601)
        out.raw(",\"to\":")
        out.string(report.to.iso8601)
        if let path = report.path {
            // Only in a report asked for one link: every other report's header is as before.
            out.raw(",\"path\":")
            out.string(path)
        }
        if let by = report.by {
            // Only in totals (`by=link`): daily reports' headers are as before.
            out.raw(",\"by\":")
            out.string(by)
        }
        out.raw(",\"watermark\":")
        if let watermark = report.watermark { out.string(watermark) } else { out.raw("null") }
        for (key, value) in extra {
            out.raw(",")
            out.string(key)
            out.raw(":")
            out.json(text: value)
        }
        out.raw(",\"tables\":{")
        head = out
    }

    /// About how many bytes the whole text is (~28 per cell): a buffer's reserve for writing it whole.
    package var estimatedSize: Int { tables.reduce(256) { $0 + $1.count * $1.columns.count * 32 } }

    /// Hands the rest of the JSON to `body` in pieces of at least `size` bytes (whole rows; the
    /// last piece may be smaller), written one after another into one buffer, which `body` must
    /// not keep (its bytes, `piece.bytes`, it may).
    package mutating func forEachPiece(of size: Int, _ body: (_ piece: JSONText) throws -> Void) rethrows {
        var piece = JSONText(capacity: size + size / 4)
        while write(into: &piece, upTo: size) {
            try body(piece)
            piece.removeAll()
        }
    }

    /// The length of the report's header (`{"report":...,"tables":{`) when it is still to be written.
    var headSize: Int { head?.count ?? 0 }

    /// Where the stream is: before row `row` of table `table` (-1 before the table's `"name":[`).
    var position: Position { Position(table: table, row: row) }

    /// The text from `start` (nil: its beginning, the report's header included) to `end` (nil: its
    /// end), as a stream of its own: the parts of consecutive positions, one after another, are the
    /// whole text, byte for byte, however it is cut (what `ReportJSONChunks` writes on two threads).
    func part(from start: Position?, to end: Position?) -> ReportJSONStream {
        var part = self
        part.stop = end
        if let start {
            part.head = nil
            part.table = start.table
            part.row = start.row
            if start.table < tables.count { part.keys = JSONKeys(tables[start.table].columns) }
        }
        return part
    }

    /// Appends the next part of the JSON to `out`: whole rows, until `out` holds at least `size`
    /// bytes or the text is complete. Returns false, writing nothing, once the text is complete.
    @discardableResult
    package mutating func write(into out: inout JSONText, upTo size: Int) -> Bool {
        guard !isFinished else { return false }
        if let head {
            out.json(head.bytes)
            self.head = nil
        }
        while out.count < size {
            if let stop, stop.table == table, stop.row == max(row, 0), row >= 0 || stop.table == tables.count {
                // The end of a part, before the stop's row (its table opened when the stop is at row 0).
                isFinished = true
                break
            }
            guard table < tables.count else {
                out.raw("}}")
                if newline { out.raw("\n") }
                isFinished = true
                break
            }
            let current = tables[table]
            if row < 0 {
                if table > 0 { out.raw(",") }
                out.string(current.name)
                out.raw(":[")
                keys = JSONKeys(current.columns)
                row = 0
                continue
            }
            guard row < current.count else {
                out.raw("]")
                table += 1
                row = -1
                continue
            }
            // Rows up to the part's stop when it is in this table.
            let end = stop.map { $0.table == table ? $0.row : current.count } ?? current.count
            // The writer appends to `out`'s buffer, which it gives back below.
            var writer = ReportRowWriter(json: JSONText(capacity: 0), keys: keys)
            swap(&writer.json, &out)
            while row < end && writer.json.count < size {
                if row > 0 { writer.json.raw(",") }
                writer.position = 0
                current.write(row, &writer)
                writer.json.raw(writer.position == 0 ? "{}" : "}")
                row += 1
            }
            swap(&writer.json, &out)
        }
        return true
    }
}
