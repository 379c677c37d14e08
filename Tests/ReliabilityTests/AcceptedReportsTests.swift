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
