import JSONText

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
    /// Counts by name (events per name): a JSON object of numbers; `name=value` pairs separated by
    /// spaces, sorted by name, in CSV, HTML and the terminal table; a name with a blank or control
    /// character, `=`, `"` or `\\` (or an empty one) in double quotes (`"Sign Up"=3`, `pairName`).
    case counts(NamedValues<Int>)
    /// Exact decimal amounts by name (revenue per currency): a JSON object of strings, otherwise as
    /// `counts`.
    case amounts(NamedValues<String>)

    /// The value as plain text (`""` for null): what CSV and the terminal table show.
    package var plainText: String {
        switch self {
        case .int(let value): return String(value)
        case .decimal(let value): return value
        case .text(let value): return value
        case .null: return ""
        case .counts(let entries):
            return zip(entries.names, entries.values).map { Self.pairName($0) + "=\($1)" }.joined(separator: " ")
        case .amounts(let entries):
            return zip(entries.names, entries.values).map { Self.pairName($0) + "=\($1)" }.joined(separator: " ")
        }
    }

    /// A name as a `name=value` pair writes it: as it is, unless a reader splitting the pairs at
    /// blanks and each at its `=` would cut it (a space, another blank or control character, or
    /// `=` in it: `Sign Up`, common in event names), or it has a quote or backslash, or is empty;
    /// then in double quotes, with `"` and `\\` escaped by a backslash (`"Sign Up"=3`). Every other
    /// byte stays as it is: CSV keeps values as they are, and the terminal table makes control
    /// characters visible itself. Until 2026-12-05 every name was written as it is, so `Sign Up=3 x`
    /// and `Button Clicked` made `Button Clicked=1 Sign Up=3 x=1`, which no reader could split back.
    static func pairName(_ name: String) -> String {
        let isPlain =
            !name.isEmpty
            && !name.utf8.contains { $0 <= 0x20 || $0 == 0x3D || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F }
        guard !isPlain else { return name }
        var quoted: [UInt8] = [0x22]
        quoted.reserveCapacity(name.utf8.count + 8)
        for byte in name.utf8 {
            if byte == 0x22 || byte == 0x5C { quoted.append(0x5C) }
            quoted.append(byte)
        }
        quoted.append(0x22)
        return String(decoding: quoted, as: UTF8.self)
    }

    /// An optional count.
    package static func int(_ value: Int?) -> ReportValue { value.map { .int($0) } ?? .null }
    /// An optional exact decimal.
    package static func decimal(_ value: String?) -> ReportValue { value.map { .decimal($0) } ?? .null }
    /// Optional text.
    package static func text(_ value: String?) -> ReportValue { value.map { .text($0) } ?? .null }
    /// Counts by name, from a dictionary.
    package static func counts(_ dictionary: [String: Int]) -> ReportValue { .counts(NamedValues(dictionary)) }
    /// Amounts by name, from a dictionary.
    package static func amounts(_ dictionary: [String: String]) -> ReportValue { .amounts(NamedValues(dictionary)) }
}

/// A report section as a table: what the renderers (terminal table, CSV, JSON) consume. Its rows
/// are not stored: `write` puts row `index`'s values, in column order, into a `ReportRowWriter`,
/// which writes them straight into the report's JSON or collects them (`row(_:)`) for the other
/// formats. A 30-day per-link report at 1,000 links has ~140k rows of 10-21 cells; holding them all
/// as values, and then writing the JSON from them, took longer than the report's queries.
package struct ReportTable: Sendable {
    /// Section name, e.g. `links`, `link_events`, `revenue`.
    package var name: String
    /// Column names, snake_case, as in the SQL views.
    package var columns: [String]
    /// How many rows.
    package var count: Int
    /// Puts row `index`'s values (0..<count), exactly one per column, into the writer.
    package var write: @Sendable (_ index: Int, _ writer: inout ReportRowWriter) -> Void

    /// Makes a table of `count` rows, each put by `write` when read.
    package init(
        name: String, columns: [String], count: Int,
        write: @escaping @Sendable (_ index: Int, _ writer: inout ReportRowWriter) -> Void
    ) {
        self.name = name
        self.columns = columns
        self.count = count
        self.write = write
    }

    /// Makes a table of stored rows (small ones: the benchmark's timings).
    package init(name: String, columns: [String], rows: [[ReportValue]]) {
        self.init(name: name, columns: columns, count: rows.count) { index, writer in
            for value in rows[index] { writer.put(value) }
        }
    }

    /// Row `index`'s values.
    package func row(_ index: Int) -> [ReportValue] {
        var writer = ReportRowWriter(collecting: columns.count)
        write(index, &writer)
        return writer.values
    }

    /// Every row, made now.
    package var rows: [[ReportValue]] { (0..<count).map(row) }

    /// The table with `values` in leading `columns` of every row.
    package func prefixed(columns: [String], values: [ReportValue]) -> ReportTable {
        let write = self.write
        return ReportTable(name: name, columns: columns + self.columns, count: count) { index, writer in
            for value in values { writer.put(value) }
            write(index, &writer)
        }
    }
}

/// Where a table's row goes, one value per column in order: written at once as the members of the
/// row's JSON object (each after its column's key, encoded once per table), or collected.
/// Tables put their values typed (`int`, `text`, `counts`...): in JSON mode they are written
/// without becoming a `ReportValue` first (a 30-day per-link report at 1,000 links writes ~3M).
package struct ReportRowWriter {
    /// The JSON written so far (JSON mode).
    var json = JSONText(capacity: 0)
    /// The table's column names as keys (JSON mode).
    var keys: JSONKeys = .none
    /// The next column (JSON mode).
    var position = 0
    /// What a table keeps from one row to the next while this writer writes its rows (JSON mode: a
    /// piece's or a chunk's rows, in order; `LinkLines` keeps the line whose UTM rows these are).
    var rowState: AnyObject?
    /// The values put so far (collecting).
    private(set) var values: [ReportValue] = []
    private let writesJSON: Bool

    /// A writer that collects a row of `count` values.
    init(collecting count: Int) {
        writesJSON = false
        values.reserveCapacity(count)
    }

    /// A writer that writes rows into `json` after these keys.
    init(json: JSONText, keys: JSONKeys) {
        writesJSON = true
        self.json = json
        self.keys = keys
    }

    /// Starts the next member: `{"column":` for the first column, `,"column":` for the others.
    @inline(__always)
    private mutating func member() {
        if position == 0 { json.raw("{") } else { json.raw(",") }
        json.key(keys, position)
        position += 1
    }

    /// The next column's value.
    package mutating func put(_ value: ReportValue) {
        guard writesJSON else { return values.append(value) }
        member()
        ReportJSON.write(value, into: &json)
    }

    /// The next column's value: a count.
    package mutating func int(_ value: Int) {
        guard writesJSON else { return values.append(.int(value)) }
        member()
        json.int(value)
    }

    /// The next column's value: a count, or null.
    package mutating func int(_ value: Int?) {
        guard let value else { return put(.null) }
        int(value)
    }

    /// The next column's value: text, or null.
    package mutating func text(_ value: String?) {
        guard writesJSON else { return values.append(.text(value)) }
        member()
        if let value { json.string(value) } else { json.raw("null") }
    }

    /// The next column's value: an exact decimal, or null.
    package mutating func decimal(_ value: String?) {
        guard writesJSON else { return values.append(.decimal(value)) }
        member()
        if let value { ReportJSON.write(decimal: value, into: &json) } else { json.raw("null") }
    }

    /// The next column's value: counts by name.
    package mutating func counts(_ value: NamedValues<Int>) {
        guard writesJSON else { return values.append(.counts(value)) }
        member()
        ReportJSON.write(value, into: &json) { $0.int($1) }
    }

    /// The next column's value: counts by name, from a dictionary.
    package mutating func counts(_ dictionary: [String: Int]) { counts(NamedValues(dictionary)) }

    /// The next column's value: amounts by name, from a dictionary.
    package mutating func amounts(_ dictionary: [String: String]) { amounts(NamedValues(dictionary)) }

    /// True when rows are written as JSON; false when their values are collected.
    var isWritingJSON: Bool { writesJSON }

    /// The next column's value, written by `body` as JSON (JSON mode only: see `isWritingJSON`).
    mutating func member(json body: (inout JSONText) throws -> Void) rethrows {
        precondition(writesJSON, "a JSON member while collecting values")
        member()
        try body(&json)
    }

    /// The next column's value: a count, with its digits as PostgreSQL printed them (copied into JSON
    /// as they are when they are the count's own decimal form, as they always are from PostgreSQL).
    mutating func int(digits: UnsafeBufferPointer<UInt8>) {
        guard writesJSON else { return values.append(.int(ReportPacked.value(ofDigits: digits))) }
        member()
        Self.write(digits: digits, into: &json)
    }

    /// Writes checked digits (`ReportPacked.forEachInt`) as the JSON number `JSONText.int` writes.
    @inline(__always)
    static func write(digits: UnsafeBufferPointer<UInt8>, into json: inout JSONText) {
        if isCanonical(digits) { json.json(utf8: digits) } else { json.int(ReportPacked.value(ofDigits: digits)) }
    }

    /// True for the digits `JSONText.int` writes: no leading zero, no `-0`.
    @inline(__always)
    static func isCanonical(_ digits: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = digits.first else { return false }
        if first == UInt8(ascii: "-") {
            return digits.count > 1 && digits[1] != UInt8(ascii: "0")
        }
        return first != UInt8(ascii: "0") || digits.count == 1
    }

    /// The next column's value: text from UTF-8 bytes (with `escaped`, PostgreSQL array escapes
    /// still in them), null when there are none (the rollups' "none").
    mutating func text(utf8: UnsafeBufferPointer<UInt8>, escaped: Bool) {
        guard !utf8.isEmpty else { return text(nil) }
        guard writesJSON, !escaped else {
            return text(escaped ? ReportPacked.unescape(utf8) : String(decoding: utf8, as: UTF8.self))
        }
        member()
        json.string(utf8: utf8)
    }

    /// The next column's value: an exact decimal from its bytes, null when there are none.
    mutating func decimal(utf8: UnsafeBufferPointer<UInt8>) {
        guard !utf8.isEmpty else { return decimal(nil) }
        guard writesJSON else { return decimal(String(decoding: utf8, as: UTF8.self)) }
        member()
        ReportJSON.write(decimal: utf8, into: &json)
    }

    /// The next column's value: amounts by name.
    package mutating func amounts(_ value: NamedValues<String>) {
        guard writesJSON else { return values.append(.amounts(value)) }
        member()
        ReportJSON.write(value, into: &json) { $0.string($1) }
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
    /// The one link the report was asked for, nil for every link.
    var path: String? { get }
    /// What the rows total over instead of one per day (`link`: `--by link`), nil for daily rows.
    var by: String? { get }
    /// The report's sections.
    var tables: [ReportTable] { get }
}

/// One table of a report (`table=utm`): the report's identity, and only that table, so JSON, CSV
/// and the terminal table show it alone.
struct ReportTableSelection: RenderableReport {
    let report: any RenderableReport
    /// The table's name, one of the report's.
    let table: String

    var kind: String { report.kind }
    var app: String { report.app }
    var from: ReportDay { report.from }
    var to: ReportDay { report.to }
    var watermark: String? { report.watermark }
    var path: String? { report.path }
    var by: String? { report.by }
    var tables: [ReportTable] { report.tables.filter { $0.name == table } }
}

extension RenderableReport {
    /// Daily rows (every report but the per-link totals).
    package var by: String? { nil }
}
