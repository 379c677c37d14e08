/// A parameterised SQL statement: every interpolated value becomes a `$n` bind parameter, never text.
///
/// ```swift
/// let sql: SQL = "select name from apps where id = \(appID) and created_at > \(since)"
/// // text: "select name from apps where id = $1 and created_at > $2", two text-format binds
/// ```
/// Parameters are sent in text format with type left to the server to infer (except `bytea`), so
/// add a cast where the server cannot infer one (`\(n)::bigint + 1`).
package struct SQL: ExpressibleByStringInterpolation, Sendable, CustomStringConvertible {
    /// The statement text with `$1`, `$2`, ... placeholders.
    package private(set) var text: String
    /// The bind values in text format, `nil` for SQL NULL.
    package private(set) var binds: [String?]
    /// The type OID of each bind, 0 to let the server infer it.
    package private(set) var bindTypes: [UInt32]

    /// A statement without parameters.
    package init(stringLiteral value: String) {
        text = value
        binds = []
        bindTypes = []
    }

    /// A statement built by interpolation.
    package init(stringInterpolation: StringInterpolation) {
        text = stringInterpolation.text
        binds = stringInterpolation.binds
        bindTypes = stringInterpolation.bindTypes
    }

    /// Appends another statement fragment, renumbering its placeholders.
    package mutating func append(_ other: SQL) {
        if other.binds.isEmpty {
            text += other.text
            return
        }
        text += SQL.renumber(other.text, offset: binds.count)
        binds += other.binds
        bindTypes += other.bindTypes
    }

    /// The statement text only (no values): safe to log.
    package var description: String { text }

    /// Builds `SQL` by collecting interpolated values as binds.
    package struct StringInterpolation: StringInterpolationProtocol {
        var text = ""
        var binds: [String?] = []
        var bindTypes: [UInt32] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        package mutating func appendLiteral(_ literal: String) { text += literal }

        /// Binds a value as the next `$n` parameter.
        package mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresText)
            bindTypes.append(type(of: value).postgresTypeOID)
            text += "$\(binds.count)"
        }

        /// Binds an optional value; `nil` becomes SQL NULL.
        package mutating func appendInterpolation<T: PostgresEncodable>(_ value: T?) {
            binds.append(value?.postgresText)
            bindTypes.append(T.postgresTypeOID)
            text += "$\(binds.count)"
        }

        /// Inserts another statement fragment (its binds are renumbered), e.g. an optional filter.
        package mutating func appendInterpolation(fragment: SQL) {
            text += SQL.renumber(fragment.text, offset: binds.count)
            binds += fragment.binds
            bindTypes += fragment.bindTypes
        }

        /// Inserts an identifier (table, column, schema), double-quoted and escaped.
        package mutating func appendInterpolation(identifier: String) {
            text += SQL.quoteIdentifier(identifier)
        }
    }

    /// Quotes an identifier for SQL text: `my"table` → `"my""table"`. By Unicode scalar: a `"`
    /// with a combining mark after it is one `Character`, which compared unequal to `"` and was left
    /// undoubled (until 2026-12-05), closing the identifier early for PostgreSQL, which reads bytes.
    package static func quoteIdentifier(_ name: String) -> String {
        var quoted = "\""
        for scalar in name.unicodeScalars {
            if scalar == "\"" { quoted.unicodeScalars.append(scalar) }
            quoted.unicodeScalars.append(scalar)
        }
        return quoted + "\""
    }

    /// Shifts `$n` placeholders in `text` by `offset` (placeholders only: quoted text is left alone).
    static func renumber(_ text: String, offset: Int) -> String {
        guard offset > 0 else { return text }
        var out = ""
        var chars = Array(text.unicodeScalars)[...]
        var quote: Unicode.Scalar? = nil
        while let c = chars.popFirst() {
            if let q = quote {
                out.unicodeScalars.append(c)
                if c == q { quote = nil }
                continue
            }
            if c == "'" || c == "\"" {
                quote = c
                out.unicodeScalars.append(c)
                continue
            }
            if c == "$", let first = chars.first, ("0"..."9").contains(first) {
                var digits = ""
                while let d = chars.first, ("0"..."9").contains(d) {
                    digits.unicodeScalars.append(d)
                    chars.removeFirst()
                }
                out += "$\(Int(digits)! + offset)"
                continue
            }
            out.unicodeScalars.append(c)
        }
        return out
    }
}
