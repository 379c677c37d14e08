import CivilTime
import Foundation
import Glibc
import JSONText
import Postgres
import TestSupport
import Testing

// The report API's client for the reliability tests (raw HTTP GETs, chunked and gzip bodies
// decoded) and the checks on what it reads: RFC 4180 CSV and the daily report's HTML escaping.

/// Percent-encodes every byte but unreserved ASCII.
func percentEncode(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
        if (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || [UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~")].contains(byte)
        {
            out.append(Character(Unicode.Scalar(byte)))
        } else {
            out += String(format: "%%%02X", byte)
        }
    }
    return out
}

/// `gzip -dc` of `bytes` (the test decodes with the system's tool, not the code under test).
func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
    let path = FileManager.default.temporaryDirectory.path + "/detour-gunzip-\(UUID().uuidString).gz"
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
        throw ChaosError("could not write \(path)")
    }
    defer { unlink(path) }
    let result = try ChildProcess.run("/bin/gzip", ["-dc", path], environment: [:], timeout: .seconds(30))
    guard result.status == 0 else { throw ChaosError("gzip -dc: \(result.errors)") }
    return Array(result.output.utf8)
}

/// GETs of the report API with the app's secret key over raw HTTP (chunked bodies decoded).
final class ReportClient {
    let port: Int
    let app: AppKeys
    var requests = 0

    init(port: Int, app: AppKeys) {
        self.port = port
        self.app = app
    }

    struct JSONAnswer {
        var bytes: [UInt8]
        var object: [String: Any]
        var tables: [String: [[String: Any]]]
    }

    func get(_ kind: String, _ query: String, acceptEncoding: String? = nil) throws -> RawHTTP.Response {
        requests += 1
        var headers = [("Authorization", "Bearer \(app.secret)"), ("X-App-ID", app.id)]
        if let acceptEncoding { headers.append(("Accept-Encoding", acceptEncoding)) }
        var answer = try #require(
            RawHTTP.exchange(
                port: port,
                RawHTTP.request("GET", "/api/reports/\(kind)?\(query)", headers: headers, contentLength: false),
                timeout: 60),
            "no answer to \(kind)?\(query)")
        if answer.headers["transfer-encoding"]?.lowercased() == "chunked" {
            answer.body = try Self.dechunk(answer.body, "\(kind)?\(query)")
        }
        return answer
    }

    func parse(_ answer: RawHTTP.Response, _ label: String) throws -> JSONAnswer {
        guard answer.headers["content-type"]?.hasPrefix("application/json") == true else {
            throw ChaosError("\(label): content type \(answer.headers["content-type"] ?? "none")")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
            let tables = object["tables"] as? [String: [[String: Any]]]
        else {
            throw ChaosError("\(label): JSON does not parse: \(answer.text.prefix(300))...\(answer.text.suffix(300))")
        }
        return JSONAnswer(bytes: answer.body, object: object, tables: tables)
    }

    func json(_ kind: String, _ query: String) throws -> JSONAnswer {
        let answer = try get(kind, query)
        guard answer.status == 200 else {
            throw ChaosError("\(kind)?\(query): \(answer.status) \(answer.text.prefix(500))")
        }
        return try parse(answer, "\(kind)?\(query)")
    }

    /// The CSV answer's records (header first), each with the header's field count.
    func csv(_ kind: String, _ query: String) throws -> [[String]] {
        let answer = try get(kind, query + "&format=csv")
        guard answer.status == 200 else {
            throw ChaosError("\(kind)?\(query)&format=csv: \(answer.status) \(answer.text.prefix(500))")
        }
        #expect(answer.headers["content-type"]?.hasPrefix("text/csv") == true)
        do {
            return try CSV.parse(String(decoding: answer.body, as: UTF8.self))
        } catch {
            throw ChaosError("\(kind)?\(query)&format=csv: \(error)")
        }
    }

    static func dechunk(_ body: [UInt8], _ label: String) throws -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while true {
            guard let end = RawHTTP.find(Array("\r\n".utf8), in: Array(body[index...])) else {
                throw ChaosError("\(label): chunked body cut short")
            }
            let sizeText = String(decoding: body[index..<(index + end)], as: UTF8.self)
            guard let size = Int(sizeText.split(separator: ";")[0], radix: 16) else {
                throw ChaosError("\(label): bad chunk size \(sizeText)")
            }
            index += end + 2
            if size == 0 { return out }
            guard index + size + 2 <= body.count else { throw ChaosError("\(label): chunk cut short") }
            out += body[index..<(index + size)]
            index += size + 2
        }
    }
}

/// An RFC 4180 reader: fields separated by commas, records by CRLF (or LF), quoted fields with `""`.
enum CSV {
    struct Invalid: Error, CustomStringConvertible { var description: String }

    /// The records; throws when a quote is misplaced or a record's field count differs from the header's.
    static func parse(_ text: String) throws -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var quoted = false
        var afterQuote = false
        var scalars = Array(text.unicodeScalars)[...]
        var fieldStart = true
        while let scalar = scalars.popFirst() {
            if quoted {
                if scalar == "\"" {
                    if scalars.first == "\"" {
                        scalars.removeFirst()
                        field.unicodeScalars.append("\"")
                    } else {
                        quoted = false
                        afterQuote = true
                    }
                } else {
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case ",":
                record.append(field)
                (field, afterQuote, fieldStart) = ("", false, true)
                continue
            case "\r" where scalars.first == "\n":
                continue
            case "\n":
                record.append(field)
                records.append(record)
                (record, field, afterQuote, fieldStart) = ([], "", false, true)
                continue
            case "\"" where fieldStart:
                quoted = true
            default:
                if afterQuote {
                    throw Invalid(description: "text after a closing quote in record \(records.count + 1)")
                }
                if scalar == "\"" {
                    throw Invalid(description: "a quote inside an unquoted field in record \(records.count + 1)")
                }
                if scalar == "\r" {
                    throw Invalid(description: "a bare CR in an unquoted field in record \(records.count + 1)")
                }
                field.unicodeScalars.append(scalar)
            }
            fieldStart = false
        }
        if quoted { throw Invalid(description: "a quoted field is not closed") }
        if !field.isEmpty || !record.isEmpty {
            record.append(field)
            records.append(record)
        }
        guard let header = records.first else { throw Invalid(description: "no header") }
        for (index, record) in records.enumerated() where record.count != header.count {
            throw Invalid(
                description: "record \(index + 1) has \(record.count) fields, the header \(header.count): "
                    + "\(record.joined(separator: "|").prefix(300))")
        }
        return records
    }
}

/// A rough well-formedness check of the daily report's HTML: every `<` opens a tag of a known
/// HTML or SVG element (or a comment / doctype), so a client string can only appear as text.
enum HTMLCheck {
    static let elements: Set<String> = [
        "html", "head", "meta", "title", "style", "body", "header", "main", "section", "div", "span", "p", "h1", "h2",
        "h3", "h4", "table", "thead", "tbody", "tr", "th", "td", "caption", "ul", "ol", "li", "small", "strong", "em",
        "code", "figure", "figcaption", "svg", "g", "rect", "line", "path", "polyline", "circle", "text", "tspan",
        "desc", "br", "abbr", "nav", "footer", "dl", "dt", "dd", "time",
    ]

    static func problems(_ html: String) -> [String] {
        var problems: [String] = []
        let bytes = Array(html.utf8)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            let rest = bytes[(index + 1)...]
            if rest.starts(with: "!--".utf8) {
                guard let end = RawHTTP.find(Array("-->".utf8), in: Array(rest)) else {
                    problems.append("unclosed comment")
                    break
                }
                index += 1 + end + 3
                continue
            }
            var nameEnd = rest.startIndex
            if nameEnd < bytes.count && (bytes[nameEnd] == UInt8(ascii: "/") || bytes[nameEnd] == UInt8(ascii: "!")) {
                nameEnd += 1
            }
            let nameStart = nameEnd
            while nameEnd < bytes.count,
                (0x61...0x7A).contains(bytes[nameEnd] | 0x20) || (0x30...0x39).contains(bytes[nameEnd])
            {
                nameEnd += 1
            }
            let name = String(decoding: bytes[nameStart..<nameEnd], as: UTF8.self).lowercased()
            if name.isEmpty || (!elements.contains(name) && name != "doctype") {
                let context = String(decoding: bytes[max(0, index - 40)..<min(bytes.count, index + 60)], as: UTF8.self)
                problems.append("'<' not opening a known element: \(String(reflecting: context))")
                index += 1
                continue
            }
            // The tag ends at the first '>' outside quotes; no '<' inside it.
            var quote: UInt8?
            var end = nameEnd
            while end < bytes.count {
                let byte = bytes[end]
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    quote = byte
                } else if byte == UInt8(ascii: ">") {
                    break
                }
                if byte == UInt8(ascii: "<") { problems.append("'<' inside the tag <\(name)") }
                end += 1
            }
            index = end + 1
        }
        return problems
    }
}
