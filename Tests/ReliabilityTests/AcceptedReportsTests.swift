import CivilTime
import Foundation
import Glibc
import JSONText
import Postgres
import TestSupport
import Testing

/// "Whatever ingest accepted and the aggregator loaded, every report is still served correctly":
/// AcceptedLoadsTests' invariant carried on from PostgreSQL to the reports.
///
/// The real `serve` binary is sent a seeded hostile corpus (AcceptedCorpus: the random part, on
/// every ingest route) plus a small seeded "report world" that gives every report rows holding
/// client strings: clicks on links whose paths and UTM values are hostile, their matches, devices
/// attributed to them (installs, hostile event names, purchases in hostile currencies, opens
/// through the click, an `app_open` the next day) on days from 0001 to 9999, and an app-defined
/// funnel whose name and steps are hostile. After `aggregate --once` and `report rebuild`, every
/// report kind is requested from the report API over every window of days holding rows (JSON, CSV,
/// every `table`, `by=link`, one `path`, gzip), plus out-of-range parameters; the daily job is run
/// for hostile days; every analyst view is queried. Checked: no 5xx (4xx only with a documented
/// code), JSON parses and agrees with the CSV's record count, CSV is RFC 4180 with the header's
/// field count everywhere, client strings come back byte for byte (after the NUL / lone surrogate →
/// U+FFFD rewrite) and equal the views', the daily HTML escapes them.
@Suite(.serialized)
struct AcceptedReportsTests {
    @Test("every report serves a seeded hostile corpus that ingest accepted and the aggregator loaded")
    func acceptedIsReported() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-accepted-reports")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let app = try AppKeys.create(id: "reports-app", environment: environment)
        var server = try ServeProcess(environment: environment)
        var corpus = AcceptedCorpus(seed: 0x5EED_4E90)
        var world = ReportWorld(seed: 0x5EED_4E91)

        // The random hostile corpus, smaller than AcceptedLoadsTests' (its loading is checked there).
        try corpus.postSingles(60, to: server, app: app)
        for index in 0..<20 {
            var clicks: [(String, AcceptedCorpus.Expected)] = []
            var matches: [(String, AcceptedCorpus.Expected)] = []
            for _ in 0..<20 {
                if corpus.chance(0.6) { clicks.append(corpus.click()) } else { matches.append(corpus.match()) }
            }
            let body =
                #"{"clicks":["# + clicks.map(\.0).joined(separator: ",") + #"],"matches":["#
                + matches.map(\.0).joined(separator: ",") + "]}"
            let answer = try server.post("/api/link/events", key: app.secret, app: app.id, body: body)
            corpus.record(answer, clicks.map(\.1) + matches.map(\.1), request: "/api/link/events #\(index)")
        }
        #expect(corpus.problems.isEmpty, "ingest answers: \(corpus.problems.prefix(10))")

        // The report world: links, matches and attributed devices whose strings are hostile.
        world.build()
        let linkBody =
            #"{"clicks":["# + world.clicks.joined(separator: ",") + #"],"matches":["#
            + world.matches.joined(separator: ",") + "]}"
        let linkAnswer = try server.post("/api/link/events", key: app.secret, app: app.id, body: linkBody)
        #expect(linkAnswer.status == 200, "report world's clicks: \(linkAnswer.status) \(linkAnswer.text.prefix(500))")
        let rejectedClicks = Set(
            ((linkAnswer.json?["rejected"] as? [[String: Any]]) ?? []).compactMap { $0["index"] as? Int })
        #expect(rejectedClicks.isEmpty, "report world's clicks refused: \(linkAnswer.text.prefix(1500))")
        for (index, chunk) in stride(from: 0, to: world.events.count, by: 50).enumerated() {
            let elements = world.events[chunk..<min(chunk + 50, world.events.count)]
            let body = #"{"batch":["# + elements.joined(separator: ",") + "]}"
            let answer = try server.post("/api/analytics/batch", key: app.publishable, app: app.id, body: body)
            #expect(
                answer.status == 200 && ((answer.json?["rejected"] as? [Any]) ?? []).isEmpty,
                "report world's events #\(index): \(answer.status) \(answer.text.prefix(1500))")
        }
        #expect(server.stop() == 0, "serve stops cleanly")

        let connection = try database.connect()
        defer { connection.close() }
        _ = try connection.execute(
            """
            INSERT INTO funnels (app_id, funnel_id, name, steps)
            VALUES (\(app.id), 'hostile', \(ReportWorld.funnelName), \(ReportWorld.funnelSteps))
            """)
        let aggregate = try Binary.run(["aggregate", "--once"], environment: environment, timeout: .seconds(180))
        #expect(aggregate.status == 0, "aggregate --once failed: \(aggregate.errors.suffix(3000))")
        let rebuild = try Binary.run(["report", "rebuild"], environment: environment, timeout: .seconds(120))
        #expect(rebuild.status == 0, "report rebuild failed: \(rebuild.errors.suffix(3000))")
        _ = try connection.query("SELECT process_rollups()")

        // Every analyst view answers, whole (every column printed as text), for the app.
        let views = try connection.query(
            """
            SELECT table_name::text AS name FROM information_schema.views
            WHERE table_schema = current_schema() AND table_name LIKE 'report%' ORDER BY 1
            """
        ).map { try $0["name", as: String.self] }
        #expect(views.count >= 15, "report views: \(views)")
        for view in views {
            do {
                let rows = try connection.query(SQL(stringLiteral: "SELECT * FROM \(view)"))
                for row in rows { for column in 0..<rows.columns.count { _ = try row[column, as: String?.self] } }
            } catch {
                Issue.record("SELECT * FROM \(view): \(error)")
            }
        }

        // Windows of at most 366 days covering every day any report has rows on.
        let dayRows = try connection.query(
            """
            SELECT DISTINCT to_char(day, 'YYYY-MM-DD') AS day FROM (
                SELECT day FROM report_link_daily WHERE app_id = \(app.id)
                UNION SELECT day FROM report_installs_daily WHERE app_id = \(app.id)
                UNION SELECT day FROM report_attribution WHERE app_id = \(app.id)
                UNION SELECT day FROM report_funnel WHERE app_id = \(app.id)
                UNION SELECT cohort_day FROM report_retention WHERE app_id = \(app.id)) d
            WHERE day >= '0001-01-01' ORDER BY 1
            """)
        let days = try dayRows.map { try $0["day", as: String.self] }.compactMap(Day.init)
        var windows: [(from: Day, to: Day)] = []
        for day in days where windows.last.map({ day.number > $0.to.number }) ?? true {
            windows.append((day, Day(number: min(day.number + 365, Day.last.number))))
        }
        #expect(windows.count >= 6 && windows.count <= 40, "windows: \(windows.map { "\($0.from)..\($0.to)" })")
        // Ingest sets a time more than 24 hours ahead to received_at: no rows after today.
        #expect(days.contains { $0.text.hasPrefix("0001-") } && days.contains { $0.text.hasPrefix("1582-") })

        server = try ServeProcess(environment: environment)
        defer { _ = server.stop() }
        let client = ReportClient(port: server.port, app: app)
        var seen = Seen()
        for window in windows {
            let range = "from=\(window.from)&to=\(window.to)"
            for kind in ReportWorld.kinds {
                let json = try client.json(kind.name, range)
                seen.collect(kind.name, json)
                for table in kind.tables {
                    let rows = json.tables[table] ?? []
                    let csv = try client.csv(kind.name, range + "&table=\(table)")
                    #expect(csv.count == rows.count + 1, "\(kind.name) \(range) table=\(table): CSV records")
                    let one = try client.json(kind.name, range + "&table=\(table)")
                    #expect(one.tables.keys.sorted() == [table] && one.tables[table]?.count == rows.count)
                }
                let mainCSV = try client.csv(kind.name, range)
                #expect(mainCSV.count == (json.tables[kind.tables[0]]?.count ?? 0) + 1, "\(kind.name) \(range) CSV")
                // Compressed: the same JSON.
                let gzip = try client.get(kind.name, range, acceptEncoding: "gzip")
                #expect(gzip.status == 200 && gzip.headers["content-encoding"] == "gzip")
                #expect(try gunzip(gzip.body) == json.bytes, "\(kind.name) \(range): gzip differs")
            }
            let totals = try client.json("links", range + "&by=link")
            #expect(totals.object["by"] as? String == "link")
            let totalsCSV = try client.csv("links", range + "&by=link&table=utm")
            #expect(totalsCSV.count == (totals.tables["utm"]?.count ?? 0) + 1)
            _ = try client.csv("links", range + "&by=link")
            // One link per window (the first hostile path with rows), percent-encoded.
            if let path = (seen.linkPathsByWindow.last ?? []).first(where: { $0.utf8.count <= 80 }) {
                for kind in ReportWorld.kinds {
                    let one = try client.json(kind.name, range + "&path=" + percentEncode(path))
                    #expect(one.object["path"] as? String == path)
                    for table in kind.tables where table != "installs" {
                        for row in one.tables[table] ?? [] {
                            #expect((row["path"] as? String).map { Array($0.utf8) } == Array(path.utf8))
                        }
                    }
                    _ = try client.csv(kind.name, range + "&path=" + percentEncode(path))
                }
            }
            seen.linkPathsByWindow.append([])
        }

        // Out-of-range parameters: a documented 4xx, never a 5xx.
        let refusals = [
            "from=0000-12-31&to=0001-01-01", "from=9999-12-31&to=10000-01-01", "from=0001-01-01&to=9999-12-31",
            "to=0001-01-01", "to=0001-01-10", "from=9999-12-31", "from=0001-01-01", "to=9999-12-31",
            "from=9999-12-01&to=9999-12-31&by=link", "to=0001-12-31&format=csv", "from=2026-02-30",
            "from=-001-01-01", "from=+2026-01-01", "to=99999-01-01", "path=%00",
            "path=" + String(repeating: "%FF", count: 80),
        ]
        for query in refusals {
            for kind in ReportWorld.kinds {
                let answer = try client.get(kind.name, query)
                #expect(answer.status < 500, "\(kind.name)?\(query): \(answer.status) \(answer.text.prefix(300))")
                if answer.status >= 400 {
                    #expect(
                        ["invalid_parameter", "unknown_app"].contains(answer.errorCode ?? ""),
                        "\(kind.name)?\(query): \(answer.status) \(answer.text.prefix(300))")
                } else {
                    #expect(answer.status == 200)
                    if query.contains("format=csv") {
                        _ = try CSV.parse(answer.text)
                    } else {
                        _ = try client.parse(answer, "\(kind.name)?\(query)")
                    }
                }
            }
        }

        // Client strings come back exactly: what the report world sent, and what the views hold.
        try seen.compare(with: world, connection: connection, app: app.id)

        // The daily job for hostile days: HTML escaped, CSV and JSON well formed.
        let out = try TemporaryDirectory(prefix: "detour-accepted-daily")
        for date in ReportWorld.dailyDates {
            let run = try Binary.run(
                ["report", "daily", "--date", date, "--app", app.id, "--out", out.path, "--allow-partial"],
                environment: environment, timeout: .seconds(120))
            #expect(run.status == 0, "report daily \(date): \(run.status) \(run.errors.suffix(2000))")
            let folder = out.path + "/\(date)/\(app.id)"
            let html = String(
                decoding: FileManager.default.contents(atPath: folder + "/report.html") ?? Data(), as: UTF8.self)
            #expect(!html.isEmpty, "report daily \(date): no report.html")
            let problems = HTMLCheck.problems(html)
            #expect(problems.isEmpty, "report daily \(date) HTML: \(problems.prefix(10))")
            for text in world.sentTexts where text.contains("<") || text.contains("&") {
                // Every occurrence of the raw text is part of its escaped form ("&amp;" holds "&").
                let escaped = text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(
                    of: "<", with: "&lt;"
                )
                .replacingOccurrences(of: ">", with: "&gt;")
                #expect(
                    html.components(separatedBy: text).count <= html.components(separatedBy: escaped).count,
                    "report daily \(date): \(String(reflecting: text)) unescaped in HTML")
            }
            let jsonData = FileManager.default.contents(atPath: folder + "/report.json") ?? Data()
            #expect((try? JSONSerialization.jsonObject(with: jsonData)) is [String: Any], "report daily \(date) JSON")
            for name in ["links", "utm", "attribution", "installs", "funnel", "retention"] {
                let text = String(
                    decoding: FileManager.default.contents(atPath: folder + "/\(name).csv") ?? Data(), as: UTF8.self)
                do {
                    let records = try CSV.parse(text)
                    #expect(!records.isEmpty, "report daily \(date) \(name).csv is empty")
                } catch {
                    Issue.record("report daily \(date) \(name).csv: \(error)")
                }
            }
            if date == ReportWorld.dailyDates[0] {
                // The day of the report world's 2026 links: its hostile paths are in the page, escaped.
                let daily = (try? JSONSerialization.jsonObject(with: jsonData)) as? [String: Any]
                let reports = daily?["reports"] as? [String: Any]
                let links =
                    ((reports?["links"] as? [String: Any])?["tables"] as? [String: Any])?["links"] as? [[String: Any]]
                #expect((links?.count ?? 0) > 0, "report daily \(date): no link rows")
            }
        }
        print("accepted-reports: \(windows.count) windows, \(client.requests) requests, \(views.count) views")
    }
}

/// A day as the API writes it, with its number of days since 1970-01-01 (proleptic Gregorian,
/// `CivilCalendar`, as PostgreSQL and the reports count; Foundation's calendar turns Julian before 1582).
private struct Day: CustomStringConvertible {
    var number: Int
    var text: String

    static let last = Day("9999-12-31")!

    init?(_ text: String) {
        let parts = text.split(separator: "-").compactMap { Int64($0) }
        guard parts.count == 3, text.count == 10 else { return nil }
        number = Int(CivilCalendar.days(year: parts[0], month: parts[1], day: parts[2]))
        self.text = text
    }

    init(number: Int) {
        self.number = number
        let date = CivilCalendar.date(fromDays: Int64(number))
        text = String(format: "%04d-%02d-%02d", Int(date.year), Int(date.month), Int(date.day))
    }

    var description: String { text }
}

/// Percent-encodes every byte but unreserved ASCII.
private func percentEncode(_ text: String) -> String {
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
private func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
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
private enum CSV {
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
private enum HTMLCheck {
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

/// What the API answered, gathered across windows, for the round-trip comparison.
private struct Seen {
    var paths = Set<[UInt8]>()
    var eventNames = Set<[UInt8]>()
    var currencies = Set<[UInt8]>()
    var utm = Set<[UInt8]>()
    var funnelNames = Set<[UInt8]>()
    var stepNames = Set<[UInt8]>()
    var retentionPaths = Set<[UInt8]>()
    var attributionPaths = Set<[UInt8]>()
    var linkPathsByWindow: [[String]] = [[]]

    mutating func collect(_ kind: String, _ answer: ReportClient.JSONAnswer) {
        func bytes(_ value: Any?) -> [UInt8]? { (value as? String).map { Array($0.utf8) } }
        switch kind {
        case "links":
            for row in answer.tables["links"] ?? [] {
                if let path = row["path"] as? String {
                    paths.insert(Array(path.utf8))
                    linkPathsByWindow[linkPathsByWindow.count - 1].append(path)
                }
                for key in ["events", "retention_events", "events_ios", "events_android"] {
                    for name in (row[key] as? [String: Any] ?? [:]).keys { eventNames.insert(Array(name.utf8)) }
                }
                for key in ["revenue", "revenue_ios", "revenue_android"] {
                    for name in (row[key] as? [String: Any] ?? [:]).keys { currencies.insert(Array(name.utf8)) }
                }
            }
            for row in answer.tables["utm"] ?? [] {
                for key in ["utm_source", "utm_medium", "utm_campaign"] {
                    if let value = bytes(row[key]) { utm.insert(value) }
                }
            }
        case "funnel":
            for row in answer.tables["funnel"] ?? [] {
                if let value = bytes(row["funnel_name"]) { funnelNames.insert(value) }
                if let value = bytes(row["step_name"]) { stepNames.insert(value) }
            }
        case "retention":
            for row in answer.tables["retention"] ?? [] {
                if let value = bytes(row["path"]) { retentionPaths.insert(value) }
            }
        case "attribution":
            for row in answer.tables["attribution"] ?? [] {
                if let value = bytes(row["path"]) { attributionPaths.insert(value) }
            }
        default: break
        }
    }

    /// The API's strings equal the views' (all of them, by bytes), and hold everything the report
    /// world made sure has rows.
    func compare(with world: ReportWorld, connection: Connection, app: String) throws {
        func set(_ sql: SQL) throws -> Set<[UInt8]> {
            Set(try connection.query(sql).compactMap { try $0["v", as: String?.self].map { Array($0.utf8) } })
        }
        func same(_ label: String, _ api: Set<[UInt8]>, _ view: Set<[UInt8]>) {
            let missing = view.subtracting(api).map { String(decoding: $0, as: UTF8.self) }
            let extra = api.subtracting(view).map { String(decoding: $0, as: UTF8.self) }
            #expect(
                missing.isEmpty && extra.isEmpty,
                "\(label): in the views, not the API: \(missing.prefix(8).map { String(reflecting: $0) }); in the API, not the views: \(extra.prefix(8).map { String(reflecting: $0) })"
            )
        }
        /// The distinct values of `column` in `view` for the app, over every day a report can name.
        func viewValues(_ column: String, _ view: String, day: String = "day") throws -> Set<[UInt8]> {
            try set(
                SQL(
                    stringLiteral: "SELECT \(column) AS v FROM \(view) WHERE app_id = '\(app)' AND \(day) "
                        + "BETWEEN '0001-01-01' AND '9999-12-31'"))
        }
        same("link paths", paths, try viewValues("path", "report_link_daily"))
        same("event names", eventNames, try viewValues("name", "report_link_daily_events"))
        same("currencies", currencies, try viewValues("currency", "report_link_daily_revenue"))
        same(
            "UTM values", utm,
            try viewValues("unnest(ARRAY[utm_source, utm_medium, utm_campaign])", "report_link_daily_utm"))
        same("funnel step names", stepNames, try viewValues("step_name", "report_funnel"))
        same("retention paths", retentionPaths, try viewValues("path", "report_retention", day: "cohort_day"))
        same("attribution paths", attributionPaths, try viewValues("path", "report_attribution"))
        // What the report world sent, as stored after the documented rewrites.
        for path in world.paths {
            #expect(paths.contains(Array(path.utf8)), "link path \(String(reflecting: path)) not in the API's links")
        }
        for path in world.paths {
            #expect(retentionPaths.contains(Array(path.utf8)), "path \(String(reflecting: path)) not in retention")
        }
        for path in world.paths {
            #expect(attributionPaths.contains(Array(path.utf8)), "path \(String(reflecting: path)) not in attribution")
        }
        for name in world.names {
            #expect(eventNames.contains(Array(name.utf8)), "event \(String(reflecting: name)) not in the links' events")
        }
        for step in ReportWorld.funnelStepsStored {
            #expect(
                stepNames.contains(Array(step.utf8)), "funnel step \(String(reflecting: step)) not in the funnel report"
            )
        }
        #expect(funnelNames.contains(Array(ReportWorld.funnelName.utf8)), "funnel name not served exactly")
    }
}

/// A seeded world that gives every report rows holding hostile client strings.
private struct ReportWorld {
    struct Kind {
        var name: String
        var tables: [String]
    }

    static let kinds = [
        Kind(name: "links", tables: ["links", "utm"]), Kind(name: "funnel", tables: ["funnel"]),
        Kind(name: "retention", tables: ["retention"]), Kind(name: "attribution", tables: ["attribution", "installs"]),
    ]

    /// Days of the world (each has clicks, installs and actions; the next day an `app_open`).
    static let baseDays = [
        "2026-06-01", "0001-01-01", "0001-01-02", "1582-10-15", "1969-12-31", "2000-02-29", "2024-12-31",
    ]
    static let dailyDates = ["2026-06-01", "0001-01-01", "9999-12-31", "1969-12-31"]

    /// Hostile strings as (JSON text, stored text).
    static let strings: [(String, String)] = [
        ("<script>alert(1)<\\/script>", "<script>alert(1)</script>"), ("=HYPERLINK(\\\"x\\\")", "=HYPERLINK(\"x\")"),
        ("a,b\\\"c\\nd", "a,b\"c\nd"), ("\\\\N", "\\N"), ("x\\u0000y", "x\u{FFFD}y"), ("\\ud800z", "\u{FFFD}z"),
        ("caf\u{E9}", "caf\u{E9}"), ("cafe\u{301}", "cafe\u{301}"), ("\u{202E}rtl", "\u{202E}rtl"),
        ("\u{FFFF}", "\u{FFFF}"), ("\u{10FFFF}x", "\u{10FFFF}x"), ("😀", "😀"), ("-1+2", "-1+2"), ("@sum", "@sum"),
        ("\\ttab", "\ttab"), ("NULL", "NULL"), ("{}", "{}"), ("a&amp;b", "a&amp;b"), ("\\r\\n", "\r\n"),
        ("''", "''"), (" ", " "), ("\u{2028}", "\u{2028}"),
    ]
    /// Link paths (sent in the URL as they are, stored as sent).
    static let pathTexts = [
        "/<b>x</b>", "/=cmd|' /C calc'!A0", "/a,b\"c", "/\\N", "/caf\u{E9}", "/cafe\u{301}", "/\u{202E}txt",
        "/\u{FFFF}", "/-1", "/@x", "/a b", "/%00", "/%FF%FE", "/'quote'", "/&amp;", "/{}",
    ]
    static let utmValues = [
        "%3Cscript%3Ealert(1)%3C%2Fscript%3E", "%3D1%2B2", "a%2Cb%22c", "%00", "%FF", "%E2%80%AE", "caf%C3%A9",
        "cafe%CC%81", "%0D%0A", "%5CN", "+", "",
    ]
    static let currencies = ["usd", "<b>", "e\\u0000r", "\\\"", "EUR", "=1", "ab,c", "\u{FFFF}"]

    static let funnelName = "<i>Funnel</i> \"=1+1\", a\tb"
    static let funnelSteps = ["app_open", "<step>", "=step,2"]
    static let funnelStepsStored = funnelSteps

    var random: SeededGenerator
    var clicks: [String] = []
    var matches: [String] = []
    var events: [String] = []
    /// Stored paths and event names that must appear in the reports.
    var paths: [String] = []
    var names: [String] = []
    /// Every client string sent (stored form), for the HTML check.
    var sentTexts: [String] = []
    private var serial = 0

    init(seed: UInt64) { random = SeededGenerator(state: seed) }

    mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }

    static func jsonString(_ text: String) -> String {
        var writer = JSONText()
        writer.string(text)
        return String(decoding: writer.takeBytes(), as: UTF8.self)
    }

    mutating func build() {
        var pathIndex = 0
        var nameIndex = 0
        for (dayIndex, day) in Self.baseDays.enumerated() {
            for device in 0..<3 {
                serial += 1
                let path = Self.pathTexts[pathIndex % Self.pathTexts.count]
                pathIndex += 1
                paths.append(path)
                sentTexts.append(path)
                let clickID = "rw-\(serial)-" + Self.strings[serial % Self.strings.count].0
                let query =
                    "?utm_source=\(pick(Self.utmValues))&utm_medium=\(pick(Self.utmValues))&utm_campaign=\(pick(Self.utmValues))"
                let platform = device % 2 == 0 ? "ios" : "android"
                let url = "https://acme.godetour.link/\(AcceptedCorpus.appHash)" + path + query
                clicks.append(
                    #"{"click_id":"\#(clickID)","url":\#(Self.jsonString(url)),"timestamp":"\#(day)T10:00:00Z","platform":"\#(platform)","kind":"web"}"#
                )
                matches.append(
                    #"{"click_id":"\#(clickID)","timestamp":"\#(day)T10:05:00Z","method":"deterministic","score":850}"#)
                // Device ids may not hold control characters (NUL included).
                let deviceStrings = ["caf\u{E9}", "cafe\u{301}", "😀", "<b>", "=1", "a,b", "\\\\N", "\u{FFFF}", "@x"]
                let deviceID = "rw-device-\(serial)-" + deviceStrings[serial % deviceStrings.count]
                let (name, stored) = Self.strings[nameIndex % Self.strings.count]
                nameIndex += 1
                names.append(stored)
                sentTexts.append(stored)
                let currency = pick(Self.currencies)
                func event(_ name: String, _ time: String, _ extra: String = "") -> String {
                    serial += 1
                    return
                        #"{"event_id":"rw-event-\#(serial)","event_name":"\#(name)","timestamp":"\#(time)","platform":"\#(platform)","device_id":"\#(deviceID)"\#(extra)}"#
                }
                let attribution = #","attribution":{"install_click_id":"\#(clickID)"}"#
                events.append(event("app_open", "\(day)T10:10:00Z", attribution))
                events.append(event(name, "\(day)T10:20:00Z", attribution))
                events.append(event("<step>", "\(day)T10:25:00Z"))
                events.append(event("=step,2", "\(day)T10:26:00Z"))
                events.append(event("sign_up", "\(day)T10:30:00Z"))
                events.append(
                    event(
                        "purchase", "\(day)T10:40:00Z",
                        #","data":{"revenue":"1\#(device).99","currency":"\#(currency)"}"#))
                events.append(event("refund", "\(day)T10:45:00Z", #","data":{"value":0.5,"currency":"\#(currency)"}"#))
                events.append(event("opened", "\(day)T11:00:00Z", #","attribution":{"open_click_id":"\#(clickID)"}"#))
                if day != "9999-12-31" {
                    let next = Day(number: Day(day)!.number + 1).text
                    events.append(event("app_open", "\(next)T09:00:00Z"))
                    events.append(event(name, "\(next)T09:30:00Z", #","data":{"n":\#(dayIndex)}"#))
                }
            }
        }
        sentTexts.append(Self.funnelName)
        sentTexts += Self.funnelSteps
        sentTexts += Self.currencies.filter { !$0.contains("\\") }.map { $0.uppercased() }
    }
}
