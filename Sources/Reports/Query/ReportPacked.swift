import Foundation
import JSONText

/// A cursor over one packed summary line (sql/055, `ReportSQL.linkSummary`): decimal integers and
/// short text fields each followed by a comma, counted text (its length in bytes, a comma and the
/// bytes: `7,default`), one-dimensional arrays in PostgreSQL's output (`{a,"b c",NULL}`, quoted
/// elements with `\` escapes) back to back, and, in the funnel line, the rest of the line as the
/// last field.
///
/// Works on the UTF-8 bytes of the line and appends into caller-owned buffers, so decoding a row
/// allocates nothing but its final values (short strings are stored inline by Swift).
/// Malformed input throws `ReportError.database`; SQL NULL elements come out as "".
struct ReportPacked {
    /// The line.
    let bytes: UnsafeBufferPointer<UInt8>
    /// The position of the next byte to read.
    private(set) var index = 0
    private let what: String

    /// A cursor at `index` in `bytes`; `what` names the source in errors.
    init(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int = 0, what: String) {
        self.bytes = bytes
        self.index = index
        self.what = what
    }

    func malformed() -> ReportError {
        ReportError.database(message: "\(what): malformed packed row at byte \(index)")
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard index < bytes.count, bytes[index] == byte else { throw malformed() }
        index += 1
    }

    /// A decimal integer followed by a comma.
    mutating func int() throws -> Int {
        let value = try number()
        try expect(UInt8(ascii: ","))
        return value
    }

    /// A decimal integer followed by a comma, or nil for an empty field (SQL NULL).
    mutating func optionalInt() throws -> Int? {
        if index < bytes.count, bytes[index] == UInt8(ascii: ",") {
            index += 1
            return nil
        }
        return try int()
    }

    /// A text field up to the next comma (which is consumed); "" when empty.
    mutating func field() throws -> String {
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
        let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        try expect(UInt8(ascii: ","))
        return value
    }

    /// A text field written as its length in bytes, a comma and the bytes (any bytes, commas included).
    mutating func counted() throws -> String {
        let count = try int()
        guard count >= 0, count <= bytes.count - index else { throw malformed() }
        let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<(index + count)]), as: UTF8.self)
        index += count
        return value
    }

    /// Counted text, or nil when counted as `-1,` (SQL NULL).
    mutating func optionalCounted() throws -> String? {
        if index + 3 <= bytes.count, bytes[index] == UInt8(ascii: "-"), bytes[index + 1] == UInt8(ascii: "1"),
            bytes[index + 2] == UInt8(ascii: ",")
        {
            index += 3
            return nil
        }
        return try counted()
    }

    /// A `YYYY-MM-DD` day followed by a comma.
    mutating func day() throws -> ReportDay {
        guard index + 10 <= bytes.count, bytes[index + 4] == UInt8(ascii: "-"), bytes[index + 7] == UInt8(ascii: "-")
        else { throw malformed() }
        func digits(_ offset: Int, _ count: Int) -> Int? {
            var value = 0
            for position in (index + offset)..<(index + offset + count) {
                let byte = bytes[position]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = digits(0, 4), let month = digits(5, 2), let dayOfMonth = digits(8, 2),
            let day = ReportDay(year: year, month: month, day: dayOfMonth)
        else { throw malformed() }
        index += 10
        try expect(UInt8(ascii: ","))
        return day
    }

    /// Fails unless the whole line has been read.
    func end() throws {
        guard index == bytes.count else { throw malformed() }
    }

    /// The rest of the line as text.
    mutating func rest() -> String {
        let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[index...]), as: UTF8.self)
        index = bytes.count
        return value
    }

    /// Reads an array's `{`; false (and the `}` read too) when the array is empty.
    private mutating func openArray() throws -> Bool {
        try expect(UInt8(ascii: "{"))
        guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else { return true }
        index += 1
        return false
    }

    /// A `text[]` in array output, its elements appended to `items`.
    mutating func strings(into items: inout [String]) throws {
        try forEachString { slice, escaped in
            items.append(escaped ? Self.unescape(slice) : String(decoding: slice, as: UTF8.self))
        }
    }

    /// Calls `body` with each element of the next `text[]` (array output) where the line holds it: its
    /// bytes without quotes, and whether they still hold `\` escapes (`unescape` removes them). An
    /// unquoted `NULL` comes as no bytes, as "" does.
    mutating func forEachString(_ body: (UnsafeBufferPointer<UInt8>, _ escaped: Bool) throws -> Void) throws {
        guard try openArray() else { return }
        while true {
            guard index < bytes.count else { throw malformed() }
            if bytes[index] == UInt8(ascii: "\"") {
                index += 1
                let start = index
                var escaped = false
                while true {
                    guard index < bytes.count else { throw malformed() }
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\\") {
                        escaped = true
                        index += 2
                    } else if byte == UInt8(ascii: "\"") {
                        break
                    } else {
                        index += 1
                    }
                }
                guard index < bytes.count else { throw malformed() }
                try body(UnsafeBufferPointer(rebasing: bytes[start..<index]), escaped)
                index += 1  // the closing quote
            } else {
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: ","), bytes[index] != UInt8(ascii: "}") {
                    if bytes[index] == UInt8(ascii: "{") { throw malformed() }
                    index += 1
                }
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                let isNull = slice.count == 4 && slice.elementsEqual("NULL".utf8)
                try body(isNull ? UnsafeBufferPointer(rebasing: bytes[start..<start]) : slice, false)
            }
            guard index < bytes.count else { throw malformed() }
            let separator = bytes[index]
            index += 1
            if separator == UInt8(ascii: "}") { return }
            guard separator == UInt8(ascii: ",") else { throw malformed() }
        }
    }

    /// Calls `body` with each element of the next `integer[]` as its digits in the line (an optional
    /// `-`, then at least one digit; checked to fit an `Int`, whose value `value(ofDigits:)` reads).
    mutating func forEachInt(_ body: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        guard try openArray() else { return }
        while true {
            try body(try digits())
            guard index < bytes.count else { throw malformed() }
            let separator = bytes[index]
            index += 1
            if separator == UInt8(ascii: "}") { return }
            guard separator == UInt8(ascii: ",") else { throw malformed() }
        }
    }

    /// A decimal integer followed by a comma, as its digits in the line (see `forEachInt`).
    mutating func intDigits() throws -> UnsafeBufferPointer<UInt8> {
        let value = try digits()
        try expect(UInt8(ascii: ","))
        return value
    }

    /// A text field up to the next comma (which is consumed), as the line holds it.
    mutating func fieldBytes() throws -> UnsafeBufferPointer<UInt8> {
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
        let value = UnsafeBufferPointer(rebasing: bytes[start..<index])
        try expect(UInt8(ascii: ","))
        return value
    }

    /// Reads the next `integer[]`, which must have `count` elements.
    mutating func expect(ints count: Int) throws {
        var found = 0
        try forEachInt { _ in found += 1 }
        guard found == count else { throw ReportError.database(message: "\(what): arrays of different lengths") }
    }

    /// Reads the next `text[]`, which must have `count` elements.
    mutating func expect(strings count: Int) throws {
        var found = 0
        try forEachString { _, _ in found += 1 }
        guard found == count else { throw ReportError.database(message: "\(what): arrays of different lengths") }
    }

    /// Where the cursor is: a byte offset into the line.
    var offset: Int { index }

    /// Where `slice` (an element `forEachString` or `forEachInt` gave) is in `line`, by offset.
    static func range(of slice: UnsafeBufferPointer<UInt8>, in line: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        guard let base = slice.baseAddress, let start = line.baseAddress else { return 0..<0 }
        let offset = base - start
        return offset..<(offset + slice.count)
    }

    /// Passes over the next array of names, which `list` was read from before (`ReportNameLists`):
    /// for a line that was checked, so the array is known to be there.
    mutating func skip(_ list: ReportNameLists.List) { index += list.byteCount }

    /// The bytes of the next array (braces included), skipped without decoding its elements.
    mutating func arrayBytes() throws -> UnsafeBufferPointer<UInt8> {
        let start = index
        try expect(UInt8(ascii: "{"))
        // PostgreSQL quotes an element only when it needs it (a brace, comma, quote, backslash, space,
        // empty or NULL), and an escape only occurs inside quotes: with no quote before the first
        // brace, that brace closes the array. Two `memchr`s instead of a byte loop with a quote
        // state (the loop was 9 % of the attribution report's instructions at 10M).
        if let base = bytes.baseAddress, index < bytes.count,
            let close = memchr(base + index, Int32(UInt8(ascii: "}")), bytes.count - index)
        {
            let end = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(close))
            if memchr(base + index, Int32(UInt8(ascii: "\"")), end - index) == nil {
                index = end + 1
                return UnsafeBufferPointer(rebasing: bytes[start..<index])
            }
        }
        var quoted = false
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if quoted {
                if byte == UInt8(ascii: "\\") {
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    quoted = false
                }
            } else if byte == UInt8(ascii: "\"") {
                quoted = true
            } else if byte == UInt8(ascii: "}") {
                return UnsafeBufferPointer(rebasing: bytes[start..<index])
            }
        }
        throw malformed()
    }

    /// An `integer[]` in array output, its elements appended to `items`.
    mutating func ints(into items: inout [Int]) throws {
        try forEachInt { items.append(Self.value(ofDigits: $0)) }
    }

    /// An optionally negative decimal integer (at least one digit, no overflow).
    private mutating func number() throws -> Int { Self.value(ofDigits: try digits()) }

    /// The bytes of an optionally negative decimal integer (at least one digit), checked to fit an
    /// `Int` (`value(ofDigits:)` reads them). Inlined: a per-link line has ~100 of them, read twice.
    @inline(__always)
    private mutating func digits() throws -> UnsafeBufferPointer<UInt8> {
        let start = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let first = index
        while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 { index += 1 }
        guard index > first, index - first <= 18 || Self.fits(UnsafeBufferPointer(rebasing: bytes[first..<index]))
        else { throw malformed() }
        return UnsafeBufferPointer(rebasing: bytes[start..<index])
    }

    /// True when decimal digits (19 or more: fewer always fit) are at most `Int.max`.
    private static func fits(_ digits: UnsafeBufferPointer<UInt8>) -> Bool {
        var value = 0
        for byte in digits {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return false }
            value = sum
        }
        return true
    }

    /// The value of digits `digits()` checked.
    static func value(ofDigits digits: UnsafeBufferPointer<UInt8>) -> Int {
        var negative = false
        var value = 0
        for byte in digits {
            if byte == UInt8(ascii: "-") {
                negative = true
            } else {
                value = value &* 10 &+ Int(byte &- UInt8(ascii: "0"))
            }
        }
        return negative ? 0 &- value : value
    }

    /// A quoted element's bytes with its `\` escapes removed.
    static func unescape(_ slice: UnsafeBufferPointer<UInt8>) -> String {
        var item: [UInt8] = []
        item.reserveCapacity(slice.count)
        var position = 0
        while position < slice.count {
            if slice[position] == UInt8(ascii: "\\"), position + 1 < slice.count { position += 1 }
            item.append(slice[position])
            position += 1
        }
        return String(decoding: item, as: UTF8.self)
    }
}
