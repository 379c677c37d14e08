import JSONText
import Postgres
import Synchronization

/// A query result of `ReportSQL.linkSummary` (columns `line`, `platform_line`), checked, with its
/// lines' order and each line's UTM rows.
///
/// What `report(.links, ...)` serves (`tables`, in a `LinesReport`): the per-link tables written
/// straight from the stored summary lines (sql/055, sql/066), without decoding them into
/// `LinkDayRow`s and `UTMRow`s first. A 30-day report at 1,000 links is 30,000 lines and ~54 MB of
/// JSON; building the rows (their maps, arrays and strings) and then writing the JSON from them
/// took longer than writing the JSON from the lines does.
///
/// Every line is checked in full when the report is read (`LinkLines.init`), so a malformed line
/// fails the report before its first byte, as with rows; writing then reads the same checked bytes.
/// The same numbers as `ReportService.links` (its `LinkReport` is what the daily job, the totals
/// per link and the tests read): `LinkLinesTests` compares the JSON and the CSV of both.
///
/// `@unchecked Sendable`: nothing changes after `init` but the UTM cursor, which is under its mutex
/// (a JSON writer keeps its own instead); the line pointers point into `result`, which it holds.
final class LinkLines: @unchecked Sendable {
    static let linkColumns = ["path", "day"] + linkCountColumns
    static let utmColumns = [
        "path", "day", "utm_source", "utm_medium", "utm_campaign", "clicks", "universal_link_opens",
        "matched_installs", "attributed_installs", "install_rate",
    ]
    private static let what = "report_link_summary_lines"

    private let result: QueryResult
    /// The lines in (path, day) order: each row's path and day (as text), its two lines where the
    /// result holds them, where the rest of the first starts after the path and day, and where its
    /// UTM arrays start. Written in this order, so reading them is sequential but for the lines'
    /// own bytes (libpq's lookups by position in this order had missed the cache, as had these
    /// keys when kept by result position).
    private let lines: [Line]
    /// The first UTM row of each line, in (path, day) order; one more entry, the UTM row count.
    private let utmStarts: [Int]
    /// The line whose UTM rows are being written, its elements found once for all of them.
    private let utmLine = Mutex(UTMElements())

    private struct Line {
        var path: String
        var day: String
        var line: UnsafeBufferPointer<UInt8>
        var platforms: UnsafeBufferPointer<UInt8>
        var start: Int
        var utmOffset: Int
        /// Its lists of event names, retention event names and currencies, found when it was
        /// checked: writing passes over them (`ReportPacked.skip`) instead of finding them again.
        var events: ReportNameLists.List
        var retention: ReportNameLists.List
        var currencies: ReportNameLists.List
    }

    /// Reads and checks every line of `result`, in result order, then puts them in (path, day)
    /// order. Not through `ReportPacked.forEachLinePairByPathAndDay`, whose body reads the lines in
    /// (path, day) order: checking them there measured ~20 ms slower at 10M (`perf stat -r 10 report
    /// links --format json`, three alternated rounds, 0.239-0.241 s against 0.209-0.222 s).
    ///
    /// - Throws: `ReportError.database` for a malformed line or other columns.
    init(_ result: QueryResult) throws {
        try ReportService.expect(result, ["line", "platform_line"])
        var keys: [(path: String?, day: ReportDay)] = []
        var lines: [Line] = [], utmCounts: [Int] = []
        keys.reserveCapacity(result.count)
        lines.reserveCapacity(result.count)
        utmCounts.reserveCapacity(result.count)
        var lists = ReportNameLists()
        for row in result {
            try row.withBytes(0) { bytes in
                try row.withBytes(1) { platformBytes in
                    var line = ReportPacked(bytes, what: Self.what)
                    var platforms = ReportPacked(platformBytes, what: Self.what)
                    guard let path = try line.optionalCounted() else { throw line.malformed() }
                    let dayStart = line.offset
                    keys.append((path, try line.day()))
                    let day = String(
                        decoding: UnsafeBufferPointer(rebasing: bytes[dayStart..<(dayStart + 10)]), as: UTF8.self)
                    let start = line.offset
                    let checked = try Self.check(&line, &platforms, &lists)
                    lines.append(
                        Line(
                            path: path, day: day, line: bytes, platforms: platformBytes, start: start,
                            utmOffset: checked.utmOffset, events: checked.events, retention: checked.retention,
                            currencies: checked.currencies))
                    utmCounts.append(checked.utmCount)
                }
            }
        }
        let order = ReportPacked.pathDayOrder(keys)
        var utmStarts = [0]
        utmStarts.reserveCapacity(order.count + 1)
        for position in order { utmStarts.append(utmStarts[utmStarts.count - 1] + utmCounts[position]) }
        self.result = result
        self.lines = order.map { lines[$0] }
        self.utmStarts = utmStarts
    }

    /// The report's `links` and `utm` tables, written from the lines when read.
    var tables: [ReportTable] {
        [
            ReportTable(name: "links", columns: Self.linkColumns, count: count) { index, out in
                self.writeLink(index, into: &out)
            },
            ReportTable(name: "utm", columns: Self.utmColumns, count: utmCount) { index, out in
                self.writeUTM(index, into: &out)
            },
        ]
    }

    /// How many lines (rows of the links table).
    var count: Int { lines.count }
    /// How many UTM rows.
    var utmCount: Int { utmStarts[utmStarts.count - 1] }

    /// Reads the rest of one line (after its path and day) and its platform line to their ends, as
    /// `writeLink` and `writeUTM` will, checking each array's length; returns its name lists, where
    /// its UTM arrays start and how many UTM rows they hold.
    private static func check(
        _ line: inout ReportPacked, _ platforms: inout ReportPacked, _ lists: inout ReportNameLists
    ) throws -> (
        events: ReportNameLists.List, retention: ReportNameLists.List, currencies: ReportNameLists.List,
        utmOffset: Int, utmCount: Int
    ) {
        for _ in 0..<15 { _ = try line.intDigits() }
        _ = try line.fieldBytes()
        let events = try lists.next(&line)
        try line.expect(ints: events.count)
        let retention = try lists.next(&line)
        try line.expect(ints: retention.count)
        let currencies = try lists.next(&line)
        try line.expect(strings: currencies.count)
        let offset = line.offset
        var sources = 0
        try line.forEachString { _, _ in sources += 1 }
        try line.expect(strings: sources)
        try line.expect(strings: sources)
        for _ in 0..<4 { try line.expect(ints: sources) }
        try line.expect(strings: sources)
        try line.end()
        try platforms.expect(ints: events.count)
        try platforms.expect(ints: events.count)
        try platforms.expect(ints: retention.count)
        try platforms.expect(ints: retention.count)
        try platforms.expect(strings: currencies.count)
        try platforms.expect(strings: currencies.count)
        try platforms.end()
        return (events, retention, currencies, offset, sources)
    }

    /// Runs `body` on the two lines of `row`, the first after its path and day. The lines were
    /// checked when read, so `body` cannot meet what it does not expect: a failure here is a defect
    /// of this type, not of the data.
    private func read(_ row: Line, _ body: (inout ReportPacked, inout ReportPacked) throws -> Void) {
        var line = ReportPacked(row.line, at: row.start, what: Self.what)
        var platforms = ReportPacked(row.platforms, what: Self.what)
        do {
            try body(&line, &platforms)
        } catch {
            fatalError("\(Self.what): a checked line failed when read again: \(error)")
        }
    }

    /// Puts the links table's row `index` (the line `index`-th in (path, day) order).
    func writeLink(_ index: Int, into out: inout ReportRowWriter) {
        let row = lines[index]
        out.text(row.path)
        out.text(row.day)
        read(row) { line, platforms in
            // The line: clicks, opens, matched, attributed, re-engagements, then the same five for
            // iOS and for Android, the install rate; the columns put each iOS count beside Android's.
            try withUnsafeTemporaryAllocation(of: UnsafeBufferPointer<UInt8>.self, capacity: 15) { counts in
                for index in 0..<15 { counts[index] = try line.intDigits() }
                let rate = try line.fieldBytes()
                for index in 0..<4 { out.int(digits: counts[index]) }
                out.decimal(utf8: rate)
                out.int(digits: counts[4])
                for index in 0..<5 {
                    out.int(digits: counts[5 + index])
                    out.int(digits: counts[10 + index])
                }
            }
            // events, retention_events, revenue; then each split by platform, in the platform line.
            let events = row.events, retention = row.retention, currencies = row.currencies
            line.skip(events)
            try out.counts(&line, events)
            line.skip(retention)
            try out.counts(&line, retention)
            line.skip(currencies)
            try out.amounts(&line, currencies)
            try out.counts(&platforms, events)
            try out.counts(&platforms, events)
            try out.counts(&platforms, retention)
            try out.counts(&platforms, retention)
            try out.amounts(&platforms, currencies)
            try out.amounts(&platforms, currencies)
        }
    }

    /// Puts the UTM table's row `index`.
    func writeUTM(_ index: Int, into out: inout ReportRowWriter) {
        guard out.isWritingJSON else {
            // Collecting (CSV, the terminal table): a writer per row, so the table keeps the cursor.
            return utmLine.withLock { writeUTM(index, with: &$0, into: &out) }
        }
        // JSON: each writer keeps its own (a piece's rows, or a chunk's on either of the two threads
        // that write a large report: one cursor for both, under the mutex, they would take turns and
        // find each other's line again at every row).
        let cursor: UTMCursor
        if let kept = out.rowState as? UTMCursor {
            cursor = kept
        } else {
            cursor = UTMCursor()
            out.rowState = cursor
        }
        writeUTM(index, with: &cursor.elements, into: &out)
    }

    /// Puts the UTM table's row `index`, finding its line's elements with `cursor` unless it holds them.
    private func writeUTM(_ index: Int, with cursor: inout UTMElements, into out: inout ReportRowWriter) {
        if !cursor.rows.contains(index) {
            // The line holding it: the last whose first UTM row is at or before it (the next line
            // with any when the table is written in order).
            var low = 0, high = lines.count
            while high - low > 1 {
                let middle = (low + high) / 2
                if utmStarts[middle] <= index { low = middle } else { high = middle }
            }
            cursor.rows = utmStarts[low]..<utmStarts[low + 1]
            cursor.line = low
            var line = ReportPacked(lines[low].line, at: lines[low].utmOffset, what: Self.what)
            do {
                try cursor.find(&line)
            } catch {
                fatalError("\(Self.what): a checked line failed when read again: \(error)")
            }
        }
        let row = lines[cursor.line]
        let element = index - cursor.rows.lowerBound
        let count = cursor.rows.count
        let bytes = row.line
        out.text(row.path)
        out.text(row.day)
        for array in 0..<3 {
            let range = cursor.ranges[array * count + element]
            out.text(utf8: UnsafeBufferPointer(rebasing: bytes[range.bytes]), escaped: range.escaped)
        }
        for array in 3..<7 {
            out.int(digits: UnsafeBufferPointer(rebasing: bytes[cursor.ranges[array * count + element].bytes]))
        }
        out.decimal(utf8: UnsafeBufferPointer(rebasing: bytes[cursor.ranges[7 * count + element].bytes]))
    }
}

/// A JSON writer's own `UTMElements` (`ReportRowWriter.rowState`).
private final class UTMCursor {
    var elements = UTMElements()
}

/// The line whose UTM rows are being written, with where the elements of its eight UTM arrays
/// are (sources, mediums, campaigns, clicks, opens, matched installs, attributed installs, install
/// rates), array after array.
private struct UTMElements {
    /// The UTM rows of the line, and its place in (path, day) order.
    var rows = 0..<0
    var line = 0
    var ranges: [(bytes: Range<Int>, escaped: Bool)] = []

    /// Finds them in `line` (a cursor at its UTM arrays).
    mutating func find(_ line: inout ReportPacked) throws {
        ranges.removeAll(keepingCapacity: true)
        let bytes = line.bytes
        for array in 0..<8 {
            if array < 3 || array == 7 {
                try line.forEachString { utf8, escaped in
                    ranges.append((ReportPacked.range(of: utf8, in: bytes), escaped))
                }
            } else {
                try line.forEachInt { ranges.append((ReportPacked.range(of: $0, in: bytes), false)) }
            }
        }
    }
}

extension ReportRowWriter {
    /// The next column's value: the next array of `line`, parallel to `list` (a checked line's), as
    /// counts by name.
    mutating func counts(_ line: inout ReportPacked, _ list: ReportNameLists.List) throws {
        try map(&line, list, Int.self)
    }

    /// The next column's value: the next array of `line`, parallel to `list`, as amounts by name
    /// (strings in JSON).
    mutating func amounts(_ line: inout ReportPacked, _ list: ReportNameLists.List) throws {
        try map(&line, list, String.self)
    }

    /// The next column's value: the next array of `line`, parallel to `list`, as values by name: in
    /// JSON straight from the line (each value after its name's key, in the names' order), else as
    /// `NamedValues`.
    private mutating func map<Value: LineElement>(
        _ line: inout ReportPacked, _ list: ReportNameLists.List, _: Value.Type
    ) throws {
        if isWritingJSON, list.order == nil {
            try member(json: { json in
                json.raw("{")
                try Value.writeEach(&line, into: &json) { json, index in
                    if index > 0 { json.raw(",") }
                    json.key(list.keys, index)
                }
                json.raw("}")
            })
            return
        }
        var values: [Value] = []
        try Value.read(&line, into: &values)
        let named = NamedValues(
            sortedNames: list.names, values: list.order.map { $0.map { values[$0] } } ?? values, keys: list.keys)
        put(Value.value(named))
    }
}

/// A packed array's element type that the lines' readers (`LinkLines`, `AttributionLines`) write
/// into JSON where the line holds it.
protocol LineElement: PackedElement {
    /// Writes each element of the next array as JSON, each after what `before` writes for its index.
    static func writeEach(
        _ line: inout ReportPacked, into json: inout JSONText, before: (inout JSONText, Int) -> Void) throws
    /// The report value of a map of these.
    static func value(_ named: NamedValues<Self>) -> ReportValue
}

extension Int: LineElement {
    static func writeEach(
        _ line: inout ReportPacked, into json: inout JSONText, before: (inout JSONText, Int) -> Void
    ) throws {
        var index = 0
        try line.forEachInt { digits in
            before(&json, index)
            ReportRowWriter.write(digits: digits, into: &json)
            index += 1
        }
    }

    static func value(_ named: NamedValues<Int>) -> ReportValue { .counts(named) }
}

extension String: LineElement {
    static func writeEach(
        _ line: inout ReportPacked, into json: inout JSONText, before: (inout JSONText, Int) -> Void
    ) throws {
        var index = 0
        try line.forEachString { utf8, escaped in
            before(&json, index)
            if escaped { json.string(ReportPacked.unescape(utf8)) } else { json.string(utf8: utf8) }
            index += 1
        }
    }

    static func value(_ named: NamedValues<String>) -> ReportValue { .amounts(named) }
}
