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
    private let tables: [ReportTable]
    /// `{"report":...,"tables":{`, until it is written.
    private var head: JSONText?
    private let newline: Bool
    /// The table being written, and its next row (-1 before its `"name":[`).
    private var table = 0
    private var row = -1
    /// The table's column names as JSON keys, encoded once per table.
    private var keys: JSONKeys = .none
    private var isFinished = false

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
            }
            guard row < current.count else {
                out.raw("]")
                table += 1
                row = -1
                continue
            }
            // The writer appends to `out`'s buffer, which it gives back below.
            var writer = ReportRowWriter(json: JSONText(capacity: 0), keys: keys)
            swap(&writer.json, &out)
            while row < current.count && writer.json.count < size {
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
