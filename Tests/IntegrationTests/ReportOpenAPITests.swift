import Foundation
import Ingest
import Postgres
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Real report answers against `docs/openapi.yaml`: the shipped binary (`detour-analytics run`
/// with its production report provider) over a simulated world loaded into PostgreSQL. IngestTests
/// check the report routes with a fake provider; here every report kind, in every format the spec
/// offers and after HEAD, and the provider's own refusals are checked with `OpenAPISpec.problems`.
@Suite(.serialized)
struct ReportOpenAPITests {
    /// An app with a live secret key but no `apps` row: what the key cache holds for up to
    /// `keyRefreshInterval` after an app is deleted. The provider answers 404 `unknown_app`.
    static let ghostApp = "ghost"
    static let ghostKey = "sk_ghost_4444"

    /// The values of a report route's `format` parameter, as the spec lists them.
    static func formats(_ spec: OpenAPISpec, _ path: String) -> [String] {
        let parameters = spec.document["paths"]?[path]?["parameters"]?.items.compactMap(spec.validator.resolve) ?? []
        let format = parameters.first { $0["name"]?.text == "format" }
        return format?["schema"]?["enum"]?.items.compactMap(\.text) ?? []
    }

    /// Report `kind`'s tables as its schema lists them, the main one (which CSV renders unless `table`
    /// names another) first; each with its columns, in the order its row schema requires them.
    static func tables(_ spec: OpenAPISpec, _ kind: String) throws -> [(section: String, columns: [String])] {
        let schema = try #require(spec.schema(kind.capitalized + "Report"), "no schema for \(kind)")
        let tables = schema["allOf"]?.items.compactMap { $0["properties"]?["tables"] }.first
        let sections = try #require(tables?["properties"]?.pairs, "\(kind): no tables")
        return sections.map { section, table in
            let items = table["items"].flatMap(spec.validator.resolve)
            return (section, items?["required"]?.items.compactMap(\.text) ?? [])
        }
    }

    /// Report `kind`'s main (first) table and its columns.
    static func mainTable(_ spec: OpenAPISpec, _ kind: String) throws -> (section: String, columns: [String]) {
        try #require(try tables(spec, kind).first, "\(kind): no tables")
    }

    /// The records of an RFC 4180 text (CRLF or LF line ends, `"` quoting with `""` inside).
    static func csvRecords(_ text: String) -> [[String]] {
        var records: [[String]] = [], fields: [String] = [], field = ""
        var quoted = false, closing = false  // inside quotes; the last character closed them
        for character in text {
            let afterClosing = closing
            closing = false
            if quoted {
                if character == "\"" { (quoted, closing) = (false, true) } else { field.append(character) }
                continue
            }
            switch character {
            case "\"":
                if afterClosing { field.append("\"") }  // `""` inside a quoted field
                quoted = true
            case ",":
                fields.append(field)
                field = ""
            case "\r\n", "\n":
                records.append(fields + [field])
                fields = []
                field = ""
            default:
                field.append(character)
            }
        }
        if !field.isEmpty || !fields.isEmpty { records.append(fields + [field]) }
        return records
    }

    /// Sends `method url` with `headers` and returns what came back.
    static func send(_ method: String, _ url: String, headers: [String: String]) throws -> HTTP.Response {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try HTTP.send(request)
    }

    /// Records every way `answer` to `method path` departs from `spec`.
    static func check(
        _ spec: OpenAPISpec, _ answer: HTTP.Response, _ method: String, _ path: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for problem in spec.problems(with: answer, to: method, path) {
            Issue.record("\(method) \(path) → \(answer.status): \(problem)", sourceLocation: sourceLocation)
        }
    }

    @Test("the CSV reader splits quoted fields, doubled quotes and both line ends as RFC 4180 says")
    func csvReader() {
        #expect(
            Self.csvRecords("a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\n,\"\"\"\"\r\n") == [
                ["a", "b"], ["x,y", "say \"hi\""], ["", "\""],
            ])
        #expect(Self.csvRecords("last,line") == [["last", "line"]])
    }

    @Test("every report kind's answers over real data (each format, HEAD) and the provider's refusals are declared")
    func realReportsAreDeclared() throws {
        let spec = try OpenAPISpec.load()
        let world = try SimulatedWorldTests.play(seed: 5, devices: 120, links: 3, days: 10)
        defer { world.database.drop() }
        let connection = try world.connect()
        defer { connection.close() }
        _ = try connection.query("SELECT process_rollups()")
        let range = try connection.query(
            "SELECT min(day)::text AS first, max(day)::text AS last FROM report_link_daily WHERE app_id = 'sim'")[0]
        let days = "from=\(try range["first", as: String.self])&to=\(try range["last", as: String.self])"
        // The key outlives its app only in a key cache; dropping the foreign key makes that state lasting.
        try connection.execute("ALTER TABLE api_keys DROP CONSTRAINT api_keys_app_id_fkey")
        try connection.execute(
            """
            INSERT INTO api_keys (app_id, key_hash, kind, prefix)
            VALUES (\(Self.ghostApp), \(apiKeyHash(Self.ghostKey)), 'secret', 'sk_gh')
            """)

        let environment = ["DATABASE_URL": world.database.url, "DETOUR_DATA_DIR": world.data.path]
        let pipeline = try PipelineProcess(["run", "--http-addr", "127.0.0.1:0"], environment: environment)
        defer { pipeline.signal(SIGTERM); _ = pipeline.waitForExit(timeout: .seconds(20)) }
        let base = try #require(
            pipeline.waitForLine(startingWith: "listening on "), "no listening line; log: \(pipeline.standardError)")
        let secret = ["Authorization": "Bearer \(world.secretKey)", "X-App-ID": "sim"]

        for kind in ["links", "funnel", "retention", "attribution"] {
            let path = "/api/reports/" + kind
            let formats = Self.formats(spec, path)
            #expect(formats.contains("json") && formats.count > 1, "\(path) offers \(formats)")
            var mediaTypes: Set<String> = []
            var mainRows: Int?, csv: String?
            let main = try Self.mainTable(spec, kind)
            for format in formats {
                let query = path + "?" + days + "&format=" + format
                let answer = try Self.send("GET", base + query, headers: secret)
                #expect(answer.status == 200, "\(query): \(answer.text)")
                Self.check(spec, answer, "GET", query)
                mediaTypes.insert(String(answer.headers["content-type"]?.prefix { $0 != ";" } ?? ""))
                if format == "json" {
                    // Real rows, so the row schemas see data and not only empty arrays.
                    let body = (try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any]) ?? [:]
                    let tables = body["tables"] as? [String: [Any]] ?? [:]
                    #expect(tables.values.contains { !$0.isEmpty }, "\(query) has no rows: \(answer.text.prefix(300))")
                    mainRows = tables[main.section]?.count
                    // The kind's own schema too: the `Report` oneOf only says that no kind matched, this says why.
                    let schema = try #require(spec.schema(kind.capitalized + "Report"), "no schema for \(kind)")
                    let instance = try #require(JSONSchema.Instance.parse(Array(answer.body)))
                    for problem in spec.validator.problems(instance, schema) { Issue.record("\(query): \(problem)") }
                }
                if format == "csv" { csv = answer.text }
                Self.check(spec, try Self.send("HEAD", base + query, headers: secret), "HEAD", query)
            }
            // The CSV is the main section: its header is the row schema's columns, one line per JSON row,
            // every line ended by CRLF as the spec says.
            let text = try #require(csv, "\(path) offers no csv")
            #expect(text.hasSuffix("\r\n") && !text.utf8.split(separator: 0x0A).dropLast().contains { $0.last != 0x0D })
            let lines = Self.csvRecords(text)
            let columns = main.columns
            #expect(lines.first == columns, "\(path) CSV header \(lines.first ?? []) vs the spec's \(columns)")
            #expect(lines.count - 1 == mainRows, "\(path): \(lines.count - 1) CSV rows, \(mainRows ?? -1) in JSON")
            for (number, fields) in lines.enumerated() where fields.count != columns.count {
                Issue.record("\(path) CSV line \(number + 1) has \(fields.count) fields, not \(columns.count)")
            }
            let ok = spec.response(OpenAPISpec.Key(method: "GET", path: path), status: 200)
            let declared = Set(ok?["content"]?.pairs.map(\.key) ?? [])
            #expect(mediaTypes == declared, "\(path): the formats give \(mediaTypes), the 200 declares \(declared)")

            // One link (`path`): the spec's answer, which names the link, and only its rows.
            let links = try Self.send("GET", base + "/api/reports/links?" + days, headers: secret)
            let linkRows =
                ((try? JSONSerialization.jsonObject(with: links.body) as? [String: Any])?["tables"]
                as? [String: [[String: Any]]])?["links"] ?? []
            let link = try #require(linkRows.first?["path"] as? String, "no link in \(links.text.prefix(300))")
            let encoded = try #require(link.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let oneLinkQuery = path + "?" + days + "&path=" + encoded
            let oneLink = try Self.send("GET", base + oneLinkQuery, headers: secret)
            #expect(oneLink.status == 200, "\(oneLinkQuery): \(oneLink.text)")
            Self.check(spec, oneLink, "GET", oneLinkQuery)
            let schema = try #require(spec.schema(kind.capitalized + "Report"))
            let instance = try #require(JSONSchema.Instance.parse(Array(oneLink.body)))
            for problem in spec.validator.problems(instance, schema) { Issue.record("\(oneLinkQuery): \(problem)") }
            let oneLinkBody = (try? JSONSerialization.jsonObject(with: oneLink.body) as? [String: Any]) ?? [:]
            #expect(oneLinkBody["path"] as? String == link)
            let oneLinkTables = oneLinkBody["tables"] as? [String: [[String: Any]]] ?? [:]
            let paths = Set(oneLinkTables.filter { $0.key != "installs" }.values.joined().map { $0["path"] as? String })
            #expect(paths.isSubset(of: [link]), "\(oneLinkQuery) has rows of \(paths)")

            // Each table alone (`table`): JSON holds only it, CSV is it, both as the spec says.
            for (section, columns) in try Self.tables(spec, kind) {
                for format in ["json", "csv"] {
                    let query = path + "?" + days + "&format=" + format + "&table=" + section
                    let answer = try Self.send("GET", base + query, headers: secret)
                    #expect(answer.status == 200, "\(query): \(answer.text.prefix(300))")
                    Self.check(spec, answer, "GET", query)
                    if format == "json" {
                        let body = (try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any]) ?? [:]
                        #expect((body["tables"] as? [String: Any]).map { Array($0.keys) } == [section], "\(query)")
                    } else {
                        #expect(Self.csvRecords(answer.text).first == columns, "\(query)")
                    }
                }
            }

            // Totals per link (`by=link`): the links report's own schema for them; the others refuse it.
            let totalsQuery = path + "?" + days + "&by=link"
            let totals = try Self.send("GET", base + totalsQuery, headers: secret)
            Self.check(spec, totals, "GET", totalsQuery)
            if kind == "links" {
                #expect(totals.status == 200, "\(totalsQuery): \(totals.text.prefix(300))")
                let schema = try #require(spec.schema("LinksTotalsReport"))
                let instance = try #require(JSONSchema.Instance.parse(Array(totals.body)))
                for problem in spec.validator.problems(instance, schema) { Issue.record("\(totalsQuery): \(problem)") }
                let rows =
                    ((try? JSONSerialization.jsonObject(with: totals.body) as? [String: Any])?["tables"]
                    as? [String: [Any]])?["links"] ?? []
                #expect(!rows.isEmpty && rows.count < mainRows ?? 0, "one row per link, fewer than per day")
                let csvQuery = totalsQuery + "&format=csv&table=utm"
                let csvAnswer = try Self.send("GET", base + csvQuery, headers: secret)
                Self.check(spec, csvAnswer, "GET", csvQuery)
                let utmColumns = try #require(spec.schema("UTMTotalRow"))["required"]?.items.compactMap(\.text)
                #expect(Self.csvRecords(csvAnswer.text).first == utmColumns, "\(csvQuery)")
            } else {
                #expect(totals.status == 400, "\(totalsQuery): \(totals.text.prefix(300))")
            }

            // The provider's refusals (and the defaults: no range, no format).
            for (method, query, headers, status) in [
                ("GET", path + "?path=", secret, 400),
                ("GET", path + "?table=none", secret, 400),
                ("GET", path + "?path=/" + String(repeating: "x", count: 1100), secret, 400),
                ("GET", path, secret, 200),
                ("HEAD", path, secret, 200),
                ("GET", path, ["Authorization": "Bearer \(Self.ghostKey)", "X-App-ID": Self.ghostApp], 404),
                ("HEAD", path, ["Authorization": "Bearer \(Self.ghostKey)", "X-App-ID": Self.ghostApp], 404),
                ("GET", path + "?from=2026-13-01", secret, 400),
                ("GET", path + "?from=2026-06-30&to=2026-06-01", secret, 400),
                ("GET", path + "?from=2024-01-01&to=2026-06-30", secret, 400),
                ("GET", path + "?format=table", secret, 400),
                ("GET", path + "?form=2026-06-01", secret, 400),
                ("HEAD", path + "?format=xml", secret, 400),
                ("GET", path + "?app=other", secret, 403),
            ] {
                let answer = try Self.send(method, base + query, headers: headers)
                #expect(answer.status == status, "\(method) \(query): \(answer.text)")
                Self.check(spec, answer, method, query)
            }
            // The API's formats, not the terminal's too: the refusal offered `table`, then refused it.
            let xml = try Self.send("GET", base + path + "?format=xml", headers: secret)
            #expect(xml.text.contains("expected json or csv, got xml"), "\(xml.text)")
        }
    }
}
