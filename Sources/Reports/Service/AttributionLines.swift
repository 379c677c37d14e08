import JSONText
import Postgres

/// A query result of `ReportSQL.attributionSummary` (column `line`), checked, with its lines in
/// (path, day) order.
///
/// What `report(.attribution, ...)` serves (`tables(installs:)`, in a `LinesReport`): its
/// `attribution` table written straight from the stored summary lines (sql/055, sql/067), without
/// decoding them into `AttributionRow`s first, and its `installs` table (one row per day, from its
/// own query) as the rows report writes it.
///
/// Every line is checked in full when the report is read (`AttributionLines.init`), so a malformed
/// line fails the report before its first byte, as with rows; writing then reads the same checked
/// bytes. The same numbers as `ReportService.attribution` (its `AttributionReport` is what the daily
/// job and the tests read): `AttributionLinesTests` compares the JSON, the CSV and the table of both.
///
/// `@unchecked Sendable`: nothing changes after `init`; the line pointers point into `result`, which
/// it holds.
final class AttributionLines: @unchecked Sendable {
    private static let what = "report_attribution_summary_lines"

    private let result: QueryResult
    /// The lines in (path, day) order.
    private let lines: [Line]

    private struct Line {
        var path: String
        var day: String
        var bytes: UnsafeBufferPointer<UInt8>
        /// Where the five counts after the path and day start.
        var start: Int
        /// The four maps, in the line's order (cohort events, cohort revenue, activity events,
        /// activity revenue): each one's name list, found when the line was checked, and where its
        /// values start.
        var maps: [(list: ReportNameLists.List, values: Int)]
    }

    /// Reads and checks every line of `result`, in result order, then puts them in (path, day) order.
    ///
    /// - Throws: `ReportError.database` for a malformed line or other columns.
    init(_ result: QueryResult) throws {
        try ReportService.expect(result, ["line"])
        var keys: [(path: String?, day: ReportDay)] = []
        var lines: [Line] = []
        keys.reserveCapacity(result.count)
        lines.reserveCapacity(result.count)
        var lists = ReportNameLists()
        for row in result {
            try row.withBytes(0) { bytes in
                var line = ReportPacked(bytes, what: Self.what)
                guard let path = try line.optionalCounted() else { throw line.malformed() }
                let dayStart = line.offset
                keys.append((path, try line.day()))
                let day = String(
                    decoding: UnsafeBufferPointer(rebasing: bytes[dayStart..<(dayStart + 10)]), as: UTF8.self)
                let start = line.offset
                for _ in 0..<5 { _ = try line.intDigits() }
                var maps: [(list: ReportNameLists.List, values: Int)] = []
                maps.reserveCapacity(4)
                for map in 0..<4 {
                    let list = try lists.next(&line)
                    maps.append((list, line.offset))
                    if map.isMultiple(of: 2) {
                        try line.expect(ints: list.count)
                    } else {
                        try line.expect(strings: list.count)
                    }
                }
                try line.end()
                lines.append(Line(path: path, day: day, bytes: bytes, start: start, maps: maps))
            }
        }
        self.result = result
        self.lines = ReportPacked.pathDayOrder(keys).map { lines[$0] }
    }

    /// How many lines (rows of the attribution table).
    var count: Int { lines.count }

    /// The report's `attribution` table, written from the lines when read, and its `installs` table
    /// of `installs` (from their own query).
    func tables(installs: [InstallsRow]) -> [ReportTable] {
        [
            ReportTable(name: "attribution", columns: AttributionReport.columns, count: count) { index, out in
                self.write(index, into: &out)
            },
            AttributionReport.installsTable(installs),
        ]
    }

    /// Puts the attribution table's row `index` (the line `index`-th in (path, day) order).
    func write(_ index: Int, into out: inout ReportRowWriter) {
        let row = lines[index]
        out.text(row.path)
        out.text(row.day)
        // The lines were checked when read, so nothing here can fail on the data: a failure is a
        // defect of this type.
        do {
            var line = ReportPacked(row.bytes, at: row.start, what: Self.what)
            for _ in 0..<5 { out.int(digits: try line.intDigits()) }
            // The columns: cohort events, activity events, cohort revenue, activity revenue.
            for map in [0, 2, 1, 3] {
                var values = ReportPacked(row.bytes, at: row.maps[map].values, what: Self.what)
                if map.isMultiple(of: 2) {
                    try out.counts(&values, row.maps[map].list)
                } else {
                    try out.amounts(&values, row.maps[map].list)
                }
            }
        } catch {
            fatalError("\(Self.what): a checked line failed when read again: \(error)")
        }
    }
}
