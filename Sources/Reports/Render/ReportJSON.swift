/// The JSON form of a report (the API's response body and the daily job's `report.json`):
///
/// ```json
/// {"report":"links","app":"acme","from":"2026-06-01","to":"2026-06-30",
///  "watermark":"2026-07-01T00:09:58.120000Z",
///  "tables":{"links":[{"path":"/articles/2","day":"2026-06-01","clicks":12,...,
///                      "revenue":{"USD":"29.99"}}],"utm":[...]}}
/// ```
/// Counts are numbers; rates and medians are numbers written exactly as PostgreSQL printed them;
/// revenue amounts are strings (exact decimals a float would round); NULL is `null`.
package enum ReportJSON {
    /// Encodes a report; `extra` members (already JSON-encoded values) are added after `watermark`,
    /// e.g. `["complete": "false"]`.
    package static func encode(_ report: any RenderableReport, extra: [(String, String)] = []) -> String {
        var out = "{\"report\":" + string(report.kind) + ",\"app\":" + string(report.app)
        out += ",\"from\":" + string(report.from.iso8601) + ",\"to\":" + string(report.to.iso8601)
        out += ",\"watermark\":" + (report.watermark.map(string) ?? "null")
        for (key, value) in extra { out += "," + string(key) + ":" + value }
        out += ",\"tables\":{"
        out += report.tables.map { table in string(table.name) + ":" + encode(table) }.joined(separator: ",")
        return out + "}}"
    }

    /// A table as an array of objects keyed by column name.
    package static func encode(_ table: ReportTable) -> String {
        "["
            + table.rows.map { row in
                "{"
                    + zip(table.columns, row).map { column, value in string(column) + ":" + encode(value) }.joined(
                        separator: ",") + "}"
            }.joined(separator: ",") + "]"
    }

    /// One value.
    package static func encode(_ value: ReportValue) -> String {
        switch value {
        case .int(let number): return String(number)
        case .decimal(let text): return isJSONNumber(text) ? text : string(text)
        case .text(let text): return string(text)
        case .null: return "null"
        case .map(let entries):
            return "{" + entries.keys.sorted().map { string($0) + ":" + encode(entries[$0]!) }.joined(separator: ",")
                + "}"
        }
    }

    /// A JSON string literal (RFC 8259 escaping).
    package static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// True for PostgreSQL numeric text that is also a JSON number (`-12.50`, `0.333333`).
    private static func isJSONNumber(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        guard let first = bytes.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        var seenDot = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                if seenDot { return false }
                seenDot = true
            } else if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                return false
            }
        }
        return bytes.last != UInt8(ascii: ".")
    }
}
