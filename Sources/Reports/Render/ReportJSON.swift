package import JSONText

/// The JSON form of a report (the API's response body and the daily job's `report.json`):
///
/// ```json
/// {"report":"links","app":"acme","from":"2026-06-01","to":"2026-06-30",
///  "watermark":"2026-07-01T00:09:58.120000Z",
///  "tables":{"links":[{"path":"/articles/2","day":"2026-06-01","clicks":12,...,
///                      "revenue":{"USD":"29.99"}}],"utm":[...]}}
/// ```
/// A report asked for one link has `"path":"/articles/2"` after `to`.
/// Counts are numbers; rates and medians are numbers written exactly as PostgreSQL printed them;
/// revenue amounts are strings (exact decimals a float would round); NULL is `null`.
package enum ReportJSON {
    /// Encodes a report; `extra` members (already JSON-encoded values) are added after `watermark`,
    /// e.g. `["complete": "false"]`.
    package static func encode(_ report: any RenderableReport, extra: [(String, String)] = []) -> String {
        String(decoding: bytes(report, extra: extra), as: UTF8.self)
    }

    /// `encode(_:extra:)` as UTF-8 bytes, written straight into one buffer (what the API sends: a
    /// 30-day per-link report at 1,000 links is ~50 MB, built as strings it took over a second).
    package static func bytes(_ report: any RenderableReport, extra: [(String, String)] = []) -> [UInt8] {
        var out = JSONText(capacity: 256)
        write(report, extra: extra, into: &out)
        return out.takeBytes()
    }

    /// Writes `encode(report, extra:)` into `out`, whole (`ReportJSONStream` writes it in pieces).
    package static func write(
        _ report: any RenderableReport, extra: [(String, String)] = [], into out: inout JSONText
    ) {
        var stream = ReportJSONStream(report, extra: extra)
        out.reserve(stream.estimatedSize)
        stream.write(into: &out, upTo: .max)
    }

    /// One value.
    package static func encode(_ value: ReportValue) -> String {
        var out = JSONText()
        write(value, into: &out)
        return String(decoding: out.takeBytes(), as: UTF8.self)
    }

    /// Writes one value: counts as numbers, decimals as numbers when PostgreSQL's text is a JSON
    /// number, maps as objects in name order.
    static func write(_ value: ReportValue, into out: inout JSONText) {
        switch value {
        case .int(let number): out.int(number)
        case .decimal(let text): write(decimal: text, into: &out)
        case .text(let text): out.string(text)
        case .null: out.raw("null")
        case .counts(let entries): write(entries, into: &out) { $0.int($1) }
        case .amounts(let entries): write(entries, into: &out) { $0.string($1) }
        }
    }

    /// Writes an exact decimal: as a number when PostgreSQL's text is a JSON number, else a string.
    static func write(decimal text: String, into out: inout JSONText) {
        if isJSONNumber(text) { out.json(text: text) } else { out.string(text) }
    }

    /// Writes named values as an object (already in name order), each value by `value`; the names'
    /// JSON keys come from their list when it has them.
    static func write<Value>(
        _ entries: NamedValues<Value>, into out: inout JSONText, _ value: (inout JSONText, Value) -> Void
    ) {
        out.raw("{")
        let values = entries.values
        if let keys = entries.keys {
            for (index, position) in values.indices.enumerated() {
                if index > 0 { out.raw(",") }
                out.key(keys, index)
                value(&out, values[position])
            }
        } else {
            for (index, position) in values.indices.enumerated() {
                if index > 0 { out.raw(",") }
                out.string(entries.names[index])
                out.raw(":")
                value(&out, values[position])
            }
        }
        out.raw("}")
    }

    /// A JSON string literal (RFC 8259 escaping).
    package static func string(_ text: String) -> String {
        var out = JSONText(capacity: text.utf8.count + 2)
        out.string(text)
        return String(decoding: out.takeBytes(), as: UTF8.self)
    }

    /// Writes an exact decimal from its bytes (non-empty), as `write(decimal:into:)` writes its text.
    static func write(decimal utf8: UnsafeBufferPointer<UInt8>, into out: inout JSONText) {
        if isJSONNumber(utf8) { out.json(utf8: utf8) } else { out.string(utf8: utf8) }
    }

    /// True for PostgreSQL numeric text that is also a JSON number (`-12.50`, `0.333333`).
    private static func isJSONNumber(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isJSONNumber($0) }
    }

    /// `isJSONNumber` of UTF-8 bytes.
    private static func isJSONNumber(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        var bytes = utf8[...]
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
