import Foundation
import JSONText

/// Writes reports as a terminal table, CSV or JSON.
package enum ReportRenderer {
    /// `render(_:as:)` as UTF-8 bytes (what the API and the CLI send); JSON is written as bytes
    /// from the start, without a String of the whole report.
    package static func bytes(_ report: any RenderableReport, as format: ReportFormat) -> [UInt8] {
        guard format == .json else { return Array(render(report, as: format).utf8) }
        var out = JSONText()
        ReportJSON.write(report, into: &out)
        out.raw("\n")
        return out.takeBytes()
    }

    /// The report in `format`: `table` shows every section with a heading and the watermark; `csv`
    /// is the main (first) table only, RFC 4180; `json` is `ReportJSON.encode(report)`.
    package static func render(_ report: any RenderableReport, as format: ReportFormat) -> String {
        switch format {
        case .table:
            var text = "\(report.kind) report for app \(report.app), \(report.from) to \(report.to)"
            text += report.path.map { ", link \($0)" } ?? ""
            text += report.by.map { ", totals per \($0)\n" } ?? "\n"
            text += "load watermark: \(report.watermark ?? "none (nothing loaded yet)")\n"
            for table in report.tables {
                text += "\n" + table.name + "\n" + self.table(table)
            }
            return text
        case .csv:
            return report.tables.first.map(csv) ?? ""
        case .json:
            return ReportJSON.encode(report) + "\n"
        }
    }

    /// A table as aligned columns (numbers right-aligned), a header and a rule; "(no rows)" when empty.
    package static func table(_ table: ReportTable) -> String {
        guard !table.rows.isEmpty else { return "(no rows)\n" }
        let cells = table.rows.map { $0.map { visible($0.plainText) } }
        var widths = table.columns.map(\.count)
        for row in cells {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func pad(_ text: String, _ width: Int, right: Bool) -> String {
            let fill = String(repeating: " ", count: max(0, width - text.count))
            return right ? fill + text : text + fill
        }
        var lines = [
            zip(table.columns, widths).map { pad($0, $1, right: false) }.joined(separator: "  "),
            widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "),
        ]
        for (row, values) in zip(cells, table.rows) {
            lines.append(
                row.enumerated().map { index, cell in
                    let isNumber: Bool
                    switch values[index] {
                    case .int, .decimal: isNumber = true
                    default: isNumber = false
                    }
                    return pad(cell, widths[index], right: isNumber)
                }.joined(separator: "  "))
        }
        return lines.map { line in
            var trimmed = Substring(line)
            while trimmed.last == " " { trimmed = trimmed.dropLast() }
            return String(trimmed)
        }.joined(separator: "\n") + "\n"
    }

    /// `text` with its control characters (C0, DEL, C1) written as `\u001b`: the terminal table is
    /// printed to an analyst's terminal, and an event name or UTM value is anyone's choice (an app's
    /// publishable key ships in the app). Until 2026-12-02 `report links` printed an event name's
    /// `ESC ] 0 ; ... BEL` (retitles the window), `ESC [ 2 J` (clears the screen) or colours as sent.
    static func visible(_ text: String) -> String {
        func isControl(_ scalar: Unicode.Scalar) -> Bool { scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) }
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
        return out
    }

    /// A table as RFC 4180 CSV: a header row, CRLF line ends, fields quoted when they contain a
    /// comma, quote, CR or LF. A text cell (a name, path, UTM value, or `name=value` pairs) that
    /// starts with `=`, `+`, `-`, `@`, a tab or CR gets a leading `'`: spreadsheets run such a cell
    /// as a formula, and anyone can put one in a click's UTM values or an event name (OWASP, "CSV
    /// injection"; since 2026-12-02). Numbers are never changed; JSON keeps every value exact.
    package static func csv(_ table: ReportTable) -> String {
        func field(_ text: String) -> String {
            // By bytes: "\r\n" is one Character in Swift, equal to neither "\r" nor "\n", and so is a
            // quote with a combining mark after it, which a search for "\"" passes over (until
            // 2026-12-05 such a quote was not doubled, so a client's name could end the field early
            // and start cells of its own, formulas included).
            guard text.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else {
                return text
            }
            var quoted: [UInt8] = [0x22]
            quoted.reserveCapacity(text.utf8.count + 8)
            for byte in text.utf8 {
                quoted.append(byte)
                if byte == 0x22 { quoted.append(0x22) }
            }
            quoted.append(0x22)
            return String(decoding: quoted, as: UTF8.self)
        }
        func cell(_ value: ReportValue) -> String {
            let text = value.plainText
            switch value {
            case .text, .counts, .amounts:
                // = + - @ tab CR
                if let first = text.utf8.first, [0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D].contains(first) {
                    return field("'" + text)
                }
            case .int, .decimal, .null: break
            }
            return field(text)
        }
        var lines = [table.columns.map(field).joined(separator: ",")]
        for index in 0..<table.count {
            lines.append(table.row(index).map(cell).joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
