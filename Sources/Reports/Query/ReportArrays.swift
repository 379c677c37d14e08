import Postgres

/// Fast decoding of the one-dimensional `text[]` and `integer[]` columns of the summary views: a
/// 30-day report at 1,000 links decodes hundreds of thousands of them, so this works on the UTF-8
/// bytes directly (PostgreSQL's array output: `{a,"b c",NULL}`, quoted elements with `\` escapes).
/// SQL NULL elements come out as "" (the summaries never store NULL elements).
enum ReportArrays {
    /// A `text[]` column of `row` at `position`.
    static func strings(_ row: Row, _ position: Int) throws -> [String] {
        let text = try row[position, as: String.self]
        guard let items = parse(text) else { throw ReportError.database(message: "column #\(position): not an array") }
        return items
    }

    /// An `integer[]` column of `row` at `position`.
    static func ints(_ row: Row, _ position: Int) throws -> [Int] {
        var text = try row[position, as: String.self]
        guard let items = text.withUTF8({ integers($0) }) else {
            throw ReportError.database(message: "column #\(position): not an integer array")
        }
        return items
    }

    /// Parses array output into its elements (nil when malformed).
    static func parse(_ text: String) -> [String]? {
        var copy = text
        return copy.withUTF8 { bytes -> [String]? in
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "{"), bytes[bytes.count - 1] == UInt8(ascii: "}") else {
                return nil
            }
            var items: [String] = []
            var index = 1
            let end = bytes.count - 1
            if index == end { return items }
            while true {
                if bytes[index] == UInt8(ascii: "\"") {
                    var item: [UInt8] = []
                    index += 1
                    while true {
                        guard index < end else { return nil }
                        let byte = bytes[index]
                        if byte == UInt8(ascii: "\\") {
                            guard index + 1 < end else { return nil }
                            item.append(bytes[index + 1])
                            index += 2
                        } else if byte == UInt8(ascii: "\"") {
                            index += 1
                            break
                        } else {
                            item.append(byte)
                            index += 1
                        }
                    }
                    items.append(String(decoding: item, as: UTF8.self))
                } else {
                    let start = index
                    while index < end, bytes[index] != UInt8(ascii: ",") {
                        if bytes[index] == UInt8(ascii: "{") { return nil }
                        index += 1
                    }
                    let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    let isNull = slice.count == 4 && slice.elementsEqual("NULL".utf8)
                    items.append(isNull ? "" : String(decoding: slice, as: UTF8.self))
                }
                if index == end { return items }
                guard bytes[index] == UInt8(ascii: ",") else { return nil }
                index += 1
            }
        }
    }

    /// Parses `{1,-2,3}` (nil when malformed).
    private static func integers(_ bytes: UnsafeBufferPointer<UInt8>) -> [Int]? {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "{"), bytes[bytes.count - 1] == UInt8(ascii: "}") else {
            return nil
        }
        var items: [Int] = []
        var index = 1
        let end = bytes.count - 1
        if index == end { return items }
        while true {
            var negative = false
            if bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            var value = 0
            var digits = 0
            while index < end, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times.addingReportingOverflow(Int(bytes[index] - UInt8(ascii: "0")))
                guard !overflow1, !overflow2 else { return nil }
                value = sum
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            items.append(negative ? -value : value)
            if index == end { return items }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }
}
