import Foundation

/// A Swift value that can be sent as a bind parameter in PostgreSQL's text format.
package protocol PostgresEncodable: Sendable {
    /// The value in PostgreSQL's text input format.
    var postgresText: String { get }
    /// The parameter's type OID; 0 (the default) lets the server infer the type from context.
    static var postgresTypeOID: UInt32 { get }
}

extension PostgresEncodable {
    package static var postgresTypeOID: UInt32 { 0 }
}

extension Int: PostgresEncodable {
    package var postgresText: String { String(self) }
}
extension Int64: PostgresEncodable {
    package var postgresText: String { String(self) }
}
extension Int32: PostgresEncodable {
    package var postgresText: String { String(self) }
}
extension Double: PostgresEncodable {
    /// Non-finite values use PostgreSQL's spellings (`NaN`, `Infinity`, `-Infinity`).
    package var postgresText: String {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return "\(self)"
    }
}
extension String: PostgresEncodable {
    package var postgresText: String { self }
}
extension Substring: PostgresEncodable {
    package var postgresText: String { String(self) }
}
extension Bool: PostgresEncodable {
    package var postgresText: String { self ? "true" : "false" }
}
extension Decimal: PostgresEncodable {
    /// Decimals bind as `numeric` text, e.g. `12.34`.
    package var postgresText: String { description }
}
extension Date: PostgresEncodable {
    /// Dates bind as UTC `timestamptz` text with microseconds: `2026-06-01 10:20:30.123456+00`.
    package var postgresText: String { PostgresTimestamp.format(self) }
}

/// A JSON document passed through as text, for `json`/`jsonb` columns and parameters.
package struct RawJSON: PostgresEncodable, PostgresDecodable, Hashable {
    /// The JSON text exactly as given.
    package var text: String
    /// Wraps JSON text; it is not validated here (the server does when casting to json/jsonb).
    package init(_ text: String) { self.text = text }
    /// Wraps UTF-8 JSON bytes.
    package init(bytes: some Collection<UInt8>) { self.text = String(decoding: bytes, as: UTF8.self) }
    package var postgresText: String { text }
    package init?(postgresText: String) { self.text = postgresText }
}

/// An element type that can form a PostgreSQL array parameter or result.
///
/// `String`, `Int` and `Int64` encode as array literals (`{"a","b"}`, `{1,2}`); `UInt8` makes
/// `[UInt8]` encode as `bytea` instead.
package protocol PostgresArrayElement: Sendable {
    /// Encodes a whole array in text format.
    static func encodeArray(_ elements: [Self]) -> String
    /// Decodes a whole array from text format; nil when malformed.
    static func decodeArray(_ text: String) -> [Self]?
    /// The type OID of the array parameter (0 to infer).
    static var arrayTypeOID: UInt32 { get }
}

extension PostgresArrayElement {
    package static var arrayTypeOID: UInt32 { 0 }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    package var postgresText: String { Element.encodeArray(self) }
    package static var postgresTypeOID: UInt32 { Element.arrayTypeOID }
}

extension UInt8: PostgresArrayElement {
    /// `bytea` in hex format: `\x0102ff`.
    package static func encodeArray(_ elements: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        out.reserveCapacity(2 + elements.count * 2)
        for byte in elements {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses `bytea` hex output (`\x...`); the legacy escape format is not supported.
    package static func decodeArray(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"),
            utf8.count % 2 == 0
        else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = hexValue(utf8[index]), let low = hexValue(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    package static var arrayTypeOID: UInt32 { 17 }  // bytea

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension String: PostgresArrayElement {
    /// Every element double-quoted with `"` and `\` escaped: `{"a","b \"c\""}`.
    package static func encodeArray(_ elements: [String]) -> String {
        var out = "{"
        for (i, element) in elements.enumerated() {
            if i > 0 { out += "," }
            out += "\""
            for c in element.unicodeScalars {
                if c == "\"" || c == "\\" { out += "\\" }
                out.unicodeScalars.append(c)
            }
            out += "\""
        }
        return out + "}"
    }

    package static func decodeArray(_ text: String) -> [String]? {
        PostgresArrayParser.parse(text)?.map { $0 ?? "" }
    }
}

extension Int64: PostgresArrayElement {
    package static func encodeArray(_ elements: [Int64]) -> String {
        "{" + elements.map(String.init).joined(separator: ",") + "}"
    }
    package static func decodeArray(_ text: String) -> [Int64]? {
        guard let items = PostgresArrayParser.parse(text) else { return nil }
        var out: [Int64] = []
        for item in items {
            guard let item, let value = Int64(item) else { return nil }
            out.append(value)
        }
        return out
    }
}

extension Int: PostgresArrayElement {
    package static func encodeArray(_ elements: [Int]) -> String {
        "{" + elements.map(String.init).joined(separator: ",") + "}"
    }
    package static func decodeArray(_ text: String) -> [Int]? {
        Int64.decodeArray(text)?.map { Int($0) }
    }
}

/// Parses one-dimensional PostgreSQL array output such as `{a,"b c",NULL}`.
enum PostgresArrayParser {
    static func parse(_ text: String) -> [String?]? {
        var scalars = Array(text.unicodeScalars)[...]
        // Skip an optional dimension decoration like `[0:1]=`.
        if scalars.first == "[", let eq = scalars.firstIndex(of: "=") { scalars = scalars[(eq + 1)...] }
        guard scalars.popFirst() == "{", scalars.popLast() == "}" else { return nil }
        if scalars.isEmpty { return [] }
        var items: [String?] = []
        while true {
            var item = ""
            var quoted = false
            if scalars.first == "\"" {
                quoted = true
                scalars.removeFirst()
                while true {
                    guard let c = scalars.popFirst() else { return nil }
                    if c == "\\" {
                        guard let next = scalars.popFirst() else { return nil }
                        item.unicodeScalars.append(next)
                    } else if c == "\"" {
                        break
                    } else {
                        item.unicodeScalars.append(c)
                    }
                }
            } else {
                while let c = scalars.first, c != "," {
                    if c == "{" { return nil }  // multi-dimensional arrays are not supported
                    item.unicodeScalars.append(c)
                    scalars.removeFirst()
                }
            }
            items.append(!quoted && item == "NULL" ? nil : item)
            guard let separator = scalars.popFirst() else { return items }
            guard separator == "," else { return nil }
        }
    }
}
