import Foundation

/// A Swift type that a result column can be decoded into from PostgreSQL's text format.
package protocol PostgresDecodable {
    /// Decodes a non-NULL value; nil when the text is not a valid value of this type.
    init?(postgresText: String)
    /// The value for SQL NULL; nil (the default) means NULL is an error for this type.
    static func decodeNull() -> Self?
}

extension PostgresDecodable {
    package static func decodeNull() -> Self? { nil }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    package init?(postgresText: String) {
        guard let value = Wrapped(postgresText: postgresText) else { return nil }
        self = .some(value)
    }
    /// NULL decodes as `nil` for optional types.
    package static func decodeNull() -> Self? { .some(.none) }
}

extension Int: PostgresDecodable {
    package init?(postgresText: String) {
        guard let value = Int(postgresText) else { return nil }
        self = value
    }
}
extension Int64: PostgresDecodable {
    package init?(postgresText: String) {
        guard let value = Int64(postgresText) else { return nil }
        self = value
    }
}
extension Int32: PostgresDecodable {
    package init?(postgresText: String) {
        guard let value = Int32(postgresText) else { return nil }
        self = value
    }
}
extension String: PostgresDecodable {
    package init?(postgresText: String) { self = postgresText }
}
extension Double: PostgresDecodable {
    package init?(postgresText: String) {
        switch postgresText {
        case "NaN": self = .nan
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        default:
            guard let value = Double(postgresText) else { return nil }
            self = value
        }
    }
}
extension Bool: PostgresDecodable {
    package init?(postgresText: String) {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}
extension Decimal: PostgresDecodable {
    /// Decodes `numeric` text exactly (`NaN` and infinities are refused).
    package init?(postgresText: String) {
        guard let first = postgresText.utf8.first,
            first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
            let value = Decimal(string: postgresText, locale: Locale(identifier: "en_US_POSIX"))
        else { return nil }
        self = value
    }
}
extension Date: PostgresDecodable {
    /// Decodes `timestamptz` (and `timestamp`, taken as UTC) in ISO DateStyle.
    package init?(postgresText: String) {
        guard let date = PostgresTimestamp.parse(postgresText) else { return nil }
        self = date
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    /// Decodes `bytea` for `[UInt8]`, a one-dimensional array otherwise.
    package init?(postgresText: String) {
        guard let value = Element.decodeArray(postgresText) else { return nil }
        self = value
    }
}
