import JSONText
import Postgres

/// A query result of `ReportSQL.funnelSummary` (column `line`), checked, with its lines in the
/// report's order and where each element of their step arrays is.
///
/// What `report(.funnel, ...)` serves (`tables`, in a `LinesReport`): the table written straight
/// from the stored summary lines (sql/055, sql/067), one line per funnel, link and cohort day
/// holding the steps as arrays, without decoding them into `FunnelStepRow`s first. A 30-day report
/// at 1,000 links is ~30,000 lines, ~150,000 step rows and ~35 MB of JSON; building the rows (seven
/// strings each) and then writing the JSON from them was ~90 % of the report's instructions in this
/// process.
///
/// Every line is checked in full when the report is read (`FunnelLines.init`), so a malformed line
/// fails the report before its first byte, as with rows; writing then reads the same checked bytes.
/// The same numbers as `ReportService.funnel` (its `FunnelReport` is what the daily job and the
/// tests read): `FunnelLinesTests` compares the JSON, the CSV and the table of both.
///
/// `@unchecked Sendable`: nothing changes after `init`; the line pointers point into `result`,
/// which it holds.
final class FunnelLines: @unchecked Sendable {
    private static let what = "report_funnel_summary_lines"

    private let result: QueryResult
    /// The distinct funnels (id and name) of the lines, with both as JSON strings.
    private let funnels: [Funnel]
    /// The lines with at least one step, in the report's order: the default funnel first, then by
    /// funnel id, link (organic last), cohort day.
    private let lines: [Line]
    /// The line of each step row (a position in `lines`).
    private let rowLines: [Int32]
    /// The first step row of each line.
    private let rowStarts: [Int]
    /// Every element of every line's six step arrays, found when the line was checked: a line's
    /// arrays one after another, from its `elements`.
    private let elements: [Element]

    /// Where an element is in its line: its first byte and its length, with the top bit of the
    /// length set when its bytes still hold `\` escapes (8 bytes for each of ~900k at 10M).
    private struct Element {
        var start: UInt32
        var packedCount: UInt32

        static let escapedBit: UInt32 = 1 << 31
    }

    private struct Funnel {
        var id: String
        var name: String
        var idJSON: [UInt8]
        var nameJSON: [UInt8]

        init(_ key: FunnelKey) {
            func json(_ text: String) -> [UInt8] {
                var json = JSONText(capacity: text.utf8.count + 2)
                json.string(text)
                return json.takeBytes()
            }
            (id, name, idJSON, nameJSON) = (key.id, key.name, json(key.id), json(key.name))
        }
    }

    private struct Line {
        var funnel: Int
        var bytes: UnsafeBufferPointer<UInt8>
        /// Where its `YYYY-MM-DD` day starts.
        var day: Int
        /// How many steps it has, and where the elements of its arrays start in `elements`.
        var steps: Int
        var elements: Int
        /// Its link's bytes; nil for the organic "link" of an event-first funnel.
        var path: Range<Int>?
    }

    /// Reads and checks every line of `result`, then puts them in the report's order.
    ///
    /// - Throws: `ReportError.database` for a malformed line, step arrays of different lengths, or
    ///   other columns.
    init(_ result: QueryResult) throws {
        try ReportService.expect(result, ["line"])
        var funnelIndex: [FunnelKey: Int] = [:]
        var funnels: [Funnel] = []
        var keys: [(path: String?, day: ReportDay)] = []
        var lines: [Line] = [], elements: [Element] = []
        keys.reserveCapacity(result.count)
        lines.reserveCapacity(result.count)
        elements.reserveCapacity(result.count * 6 * 5)
        for row in result {
            try row.withBytes(0) { bytes in
                var line = ReportPacked(bytes, what: Self.what)
                // Offsets and lengths are kept in 31 bits.
                guard bytes.count < Int(Element.escapedBit) else { throw line.malformed() }
                let key = FunnelKey(id: try line.counted(), name: try line.counted())
                let funnel: Int
                if let known = funnelIndex[key] {
                    funnel = known
                } else {
                    funnel = funnels.count
                    funnelIndex[key] = funnel
                    funnels.append(Funnel(key))
                }
                let dayStart = line.offset
                let day = try line.day()
                let first = elements.count
                let steps = try Self.check(&line, into: &elements)
                // The rest of the line: `-` for the organic "link", else `+` and the path.
                let rest = line.offset
                let path: Range<Int>?
                if rest + 1 == bytes.count, bytes[rest] == UInt8(ascii: "-") {
                    path = nil
                } else if rest + 1 < bytes.count, bytes[rest] == UInt8(ascii: "+") {
                    path = (rest + 1)..<bytes.count
                } else {
                    throw line.malformed()
                }
                guard steps > 0 else { return }
                keys.append(
                    (path.map { String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }, day))
                lines.append(
                    Line(funnel: funnel, bytes: bytes, day: dayStart, steps: steps, elements: first, path: path))
            }
        }
        // The order of `ReportSQL.funnel`: the default funnel first, then by funnel id; within a
        // funnel by link (organic last), then cohort day, as `ReportPacked.pathDayOrder` orders.
        let funnelRanks = Self.ranks(funnels)
        let pathDay = ReportPacked.pathDayOrder(keys)
        var pathDayRank = [Int](repeating: 0, count: pathDay.count)
        for (rank, position) in pathDay.enumerated() { pathDayRank[position] = rank }
        let order = lines.indices.sorted {
            (funnelRanks[lines[$0].funnel], pathDayRank[$0]) < (funnelRanks[lines[$1].funnel], pathDayRank[$1])
        }
        var rowLines: [Int32] = [], rowStarts: [Int] = []
        rowStarts.reserveCapacity(order.count)
        for (position, line) in order.enumerated() {
            rowStarts.append(rowLines.count)
            rowLines.append(contentsOf: repeatElement(Int32(position), count: lines[line].steps))
        }
        self.result = result
        self.funnels = funnels
        self.lines = order.map { lines[$0] }
        self.rowLines = rowLines
        self.rowStarts = rowStarts
        self.elements = elements
    }

    /// How many step rows.
    var count: Int { rowLines.count }

    /// The report's `funnel` table, written from the lines when read.
    var tables: [ReportTable] {
        [
            ReportTable(name: "funnel", columns: FunnelReport.columns, count: count) { index, out in
                self.write(index, into: &out)
            }
        ]
    }

    /// Each funnel's rank in the report: `default` first, then by id (ids repeat only if a funnel's
    /// name changed while the lines were read; they then rank by name).
    private static func ranks(_ funnels: [Funnel]) -> [Int] {
        let order = funnels.indices.sorted { left, right in
            let (a, b) = (funnels[left], funnels[right])
            if (a.id == "default") != (b.id == "default") { return a.id == "default" }
            return a.id != b.id ? a.id < b.id : a.name < b.name
        }
        var ranks = [Int](repeating: 0, count: funnels.count)
        for (rank, position) in order.enumerated() { ranks[position] = rank }
        return ranks
    }

    /// Reads a line's six step arrays (steps, names, devices, conversions from the previous step,
    /// overall conversions, median seconds from the previous step), appends where each element is
    /// to `elements`, and returns how many steps they hold.
    private static func check(_ line: inout ReportPacked, into elements: inout [Element]) throws -> Int {
        let bytes = line.bytes
        func element(_ slice: UnsafeBufferPointer<UInt8>, escaped: Bool) -> Element {
            let range = ReportPacked.range(of: slice, in: bytes)
            return Element(
                start: UInt32(range.lowerBound), packedCount: UInt32(range.count) | (escaped ? Element.escapedBit : 0))
        }
        let first = elements.count
        try line.forEachInt { elements.append(element($0, escaped: false)) }
        let steps = elements.count - first
        for array in 1..<6 {
            let start = elements.count
            if array == 2 {
                try line.forEachInt { elements.append(element($0, escaped: false)) }
            } else {
                try line.forEachString { utf8, escaped in elements.append(element(utf8, escaped: escaped)) }
            }
            guard elements.count - start == steps else {
                throw ReportError.database(message: "\(what): step arrays of different lengths")
            }
        }
        return steps
    }

    /// Puts the funnel table's row `index`: step `index - rowStarts[line]` of its line.
    func write(_ index: Int, into out: inout ReportRowWriter) {
        let position = Int(rowLines[index])
        let line = lines[position]
        let funnel = funnels[line.funnel]
        let step = index - rowStarts[position]
        let bytes = line.bytes
        func element(_ array: Int) -> (utf8: UnsafeBufferPointer<UInt8>, escaped: Bool) {
            let element = elements[line.elements + array * line.steps + step]
            let start = Int(element.start), count = Int(element.packedCount & ~Element.escapedBit)
            return (
                UnsafeBufferPointer(rebasing: bytes[start..<(start + count)]),
                element.packedCount & Element.escapedBit != 0
            )
        }
        if out.isWritingJSON {
            out.member(json: { $0.json(funnel.idJSON) })
            out.member(json: { $0.json(funnel.nameJSON) })
        } else {
            out.text(funnel.id)
            out.text(funnel.name)
        }
        if let path = line.path {
            out.text(utf8: UnsafeBufferPointer(rebasing: bytes[path]), escaped: false)
        } else {
            out.text(nil)
        }
        out.text(utf8: UnsafeBufferPointer(rebasing: bytes[line.day..<(line.day + 10)]), escaped: false)
        out.int(digits: element(0).utf8)
        let name = element(1)
        // An empty (or NULL) step name is text, not null, as the rows have it.
        if name.utf8.isEmpty { out.text("") } else { out.text(utf8: name.utf8, escaped: name.escaped) }
        out.int(digits: element(2).utf8)
        for array in 3..<6 {
            let decimal = element(array)
            if decimal.escaped {
                out.decimal(ReportService.absent(ReportPacked.unescape(decimal.utf8)))
            } else {
                out.decimal(utf8: decimal.utf8)
            }
        }
    }
}

/// A funnel as its lines name it.
private struct FunnelKey: Hashable {
    var id: String
    var name: String
}
