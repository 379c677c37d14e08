import Foundation
import Locking
import Postgres
import Reports
import TestSupport
import Testing

@Suite struct EndpointTests {
    @Test("every report of an app whose time zone the server no longer knows answers 409 unknown_time_zone naming it")
    func unknownTimeZone() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        try Fixture(database.connection).app("gone")
        // A name the server knew when the app was set up and no longer does (the check refuses it now).
        try database.connection.execute("ALTER TABLE apps DROP CONSTRAINT apps_time_zone_known")
        try database.connection.execute("UPDATE apps SET time_zone = 'Gone/Zone' WHERE id = 'gone'")
        for kind in ["links", "funnel", "retention", "attribution"] {
            for parameters in [["app": "gone"], ["app": "gone", "from": "2026-06-01", "to": "2026-06-02"]] {
                let answer = ReportEndpoint.respond(
                    kind: kind, parameters: parameters, connection: database.connection, today: nil,
                    defaultFormat: .json)
                #expect(answer.status == 409 && answer.exitCode == 78, "\(kind) \(parameters): \(answer.body)")
                let expected = #"{"error":"unknown_time_zone","message":"app gone's time zone \"Gone/Zone\" is not"#
                #expect(answer.body.hasPrefix(expected), "\(answer.body)")
            }
            let other = ReportEndpoint.respond(
                kind: kind, parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-02"],
                connection: database.connection, today: nil, defaultFormat: .json)
            #expect(other.status == 200, "\(kind): \(other.body)")
        }
    }

    @Test("a report reads one snapshot: a load committing while it runs shows in all of it or none of it")
    func oneSnapshot() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let parameters = ["app": "a", "from": "2026-06-01", "to": "2026-06-30"]
        let report: @Sendable () -> ReportResponse = {
            ReportEndpoint.respond(
                kind: "links", parameters: parameters, connection: database.connection, today: nil,
                defaultFormat: .json)
        }
        let before = report()
        #expect(before.status == 200, "\(before.body)")
        // A pass that moves the watermark and the per-link counts, caught half way (RollupPassRace).
        let loader = try database.db.connect()
        defer { loader.close() }
        let pass = try RollupPassRace(on: loader)
        let during = Locked<ReportResponse?>(nil)
        let reader = Thread { during.withLock { $0 = report() } }
        reader.start()
        #expect(try pass.reportWaits(), "the report never waited for the link rollup")
        try pass.commit()
        let answered = try eventually(timeout: .seconds(60)) { during.withLock { $0 != nil } }
        #expect(answered)
        // Until 2026-12-05 it stated the old watermark beside the new counts (clicks + 1000).
        #expect(during.withLock { $0?.body } == before.body)
        let after = report()
        #expect(after.body != before.body && after.body.contains("2026-06-05T13:00:00.000000Z"), "\(after.body)")
    }

    @Test("a report states the watermark its numbers reach: a load not rolled up yet is not claimed")
    func watermarkRolledUp() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection, queued: true)
        try fixture.app("a")
        fixture.click("c1", path: "/x", at: "2026-06-01T10:00:00Z")
        try fixture.load()
        try fixture.watermark("2026-06-01T10:00:00Z")
        try fixture.process()
        func state() throws -> (stated: String?, loads: String?, clicks: Int, body: String) {
            let row = try database.connection.query(
                """
                SELECT to_char(w.watermark AT TIME ZONE 'UTC', 'HH24:MI') AS stated,
                       to_char(w.loads_watermark AT TIME ZONE 'UTC', 'HH24:MI') AS loads,
                       (SELECT coalesce(sum(clicks), 0)::int FROM report_link_daily WHERE app_id = 'a') AS clicks
                FROM report_watermark w
                """
            ).first
            let answer = ReportEndpoint.respond(
                kind: "links", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-01"],
                connection: database.connection, today: nil, defaultFormat: .json)
            return (
                try row?["stated", as: String?.self] ?? nil, try row?["loads", as: String?.self] ?? nil,
                try row?["clicks", as: Int.self] ?? -1, answer.body
            )
        }
        var now = try state()
        #expect(now.stated == "10:00" && now.loads == "10:00" && now.clicks == 1)
        // Loaded, its rollup work queued and not applied: the reports still count one click, and
        // state 10:00, the loads being at 11:00. Until 2026-12-05 they stated 11:00 over one click.
        fixture.click("c2", path: "/x", at: "2026-06-01T11:00:00Z")
        try fixture.load()
        try fixture.watermark("2026-06-01T11:00:00Z")
        now = try state()
        #expect(now.stated == "10:00" && now.loads == "11:00" && now.clicks == 1, "\(now)")
        #expect(now.body.contains(#""watermark":"2026-06-01T10:00:00.000000Z""#), "\(now.body)")
        try fixture.process()
        now = try state()
        #expect(now.stated == "11:00" && now.loads == "11:00" && now.clicks == 2, "\(now)")
        #expect(now.body.contains(#""watermark":"2026-06-01T11:00:00.000000Z""#), "\(now.body)")
    }

    @Test("totals per link add revenue of any size exactly (one amount of 31 decimals failed them: 503, retry later)")
    func totalsOfLargeAmounts() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try loadSmallWorld(fixture)
        for (at, revenue) in [
            ("2026-06-02T10:00:00Z", "0.0000000000000000000000000000001"),
            ("2026-06-03T10:00:00Z", "1000000000000000000000000000000000000000"),
        ] {
            fixture.event(
                "purchase", device: "d1", at: at, installClick: "c1", openType: "deferred",
                data: #"{"revenue":\#(revenue),"currency":"EUR"}"#)
        }
        try fixture.load()
        let totals = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-30", "by": "link"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .json)
        #expect(totals.status == 200, "\(totals.body)")
        // The small world has EUR 10 on the link already.
        let sum = "1" + String(repeating: "0", count: 37) + "10." + String(repeating: "0", count: 30) + "1"
        #expect(totals.body.contains(#""EUR":"\#(sum)""#))
    }

    @Test("the API answers JSON with the watermark, and errors with a status and a stable code")
    func respond() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let ok = ReportEndpoint.respond(
            kind: "retention", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-01"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .json)
        #expect(ok.status == 200 && ok.exitCode == 0 && ok.contentType == "application/json")
        #expect(
            ok.body.hasPrefix(
                #"{"report":"retention","app":"a","from":"2026-06-01","to":"2026-06-01","watermark":"2026-06-05T12:00:00.000000Z","tables":{"retention":[{"path":"/x","cohort_day":"2026-06-01","cohort_size":2,"d1":1,"d3":0,"d7":null,"#
            ))

        let unknownApp = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "nope"], connection: database.connection, today: day("2026-06-30"),
            defaultFormat: .json)
        #expect(unknownApp.status == 404 && unknownApp.exitCode == 64)
        #expect(unknownApp.body == #"{"error":"unknown_app","message":"unknown app nope"}"# + "\n")

        let badKind = ReportEndpoint.respond(
            kind: "revenue", parameters: ["app": "a"], connection: database.connection, today: day("2026-06-30"),
            defaultFormat: .table)
        #expect(badKind.status == 400 && badKind.contentType.hasPrefix("text/plain"))

        let table = ReportEndpoint.respond(
            kind: "funnel", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-01"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .table)
        #expect(table.body.contains("funnel report for app a, 2026-06-01 to 2026-06-01"))
        #expect(table.body.contains("median_seconds_from_previous"))

        // One link: its path in the JSON header and the table's title, its rows only.
        let oneLink = ReportEndpoint.respond(
            kind: "retention", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-02", "path": "/x"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .json)
        #expect(oneLink.status == 200)
        #expect(
            oneLink.body.hasPrefix(
                #"{"report":"retention","app":"a","from":"2026-06-01","to":"2026-06-02","path":"/x","watermark":"#))
        let all = ReportEndpoint.respond(
            kind: "retention", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-02"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .json)
        #expect(all.body.contains(#""path":null"#), "the whole report has organic rows, which one link's leaves out")
        #expect(!oneLink.body.contains(#""path":null"#) && oneLink.body.contains(#""path":"/x","cohort_day""#))
        let oneLinkTable = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a", "path": "/x"], connection: database.connection,
            today: day("2026-06-30"), defaultFormat: .table)
        #expect(oneLinkTable.body.hasPrefix("links report for app a, 2026-06-01 to 2026-06-30, link /x\n"))
        // One table: JSON, CSV and the terminal show it alone; a table the report lacks is refused.
        let utmJSON = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a", "table": "utm", "format": "json"], connection: database.connection,
            today: day("2026-06-30"), defaultFormat: .table)
        #expect(utmJSON.status == 200 && utmJSON.body.contains(#""tables":{"utm":[{"path":"/x","#))
        #expect(!utmJSON.body.contains(#""links":"#))
        let utmCSV = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a", "table": "utm", "format": "csv"], connection: database.connection,
            today: day("2026-06-30"), defaultFormat: .table)
        #expect(utmCSV.body.hasPrefix("path,day,utm_source,utm_medium,utm_campaign,clicks,"))
        let installsTable = ReportEndpoint.respond(
            kind: "attribution", parameters: ["app": "a", "table": "installs"], connection: database.connection,
            today: day("2026-06-30"), defaultFormat: .table)
        #expect(installsTable.body.contains("\ninstalls\n") && !installsTable.body.contains("\nattribution\n"))
        // Totals per link: "by" in the header and the title, one row per link; links only.
        let totals = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-30", "by": "link"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .json)
        #expect(totals.status == 200)
        #expect(
            totals.body.hasPrefix(#"{"report":"links","app":"a","from":"2026-06-01","to":"2026-06-30","by":"link","#))
        #expect(totals.body.contains(#""links":[{"path":"/x","days":"#) && !totals.body.contains(#""day":"#))
        let totalsTable = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a", "by": "link", "path": "/x", "table": "utm"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .table)
        #expect(
            totalsTable.body.hasPrefix("links report for app a, 2026-06-01 to 2026-06-30, link /x, totals per link\n"))
        #expect(totalsTable.body.contains("\nutm\npath  days  utm_source  utm_medium  utm_campaign  clicks"))
        let byDay = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a", "by": "day"], connection: database.connection,
            today: day("2026-06-30"), defaultFormat: .json)
        let daily = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a"], connection: database.connection, today: day("2026-06-30"),
            defaultFormat: .json)
        #expect(byDay.body == daily.body && byDay.status == 200)
        for (kind, by) in [("funnel", "link"), ("links", "week")] {
            let refused = ReportEndpoint.respond(
                kind: kind, parameters: ["app": "a", "by": by], connection: database.connection,
                today: day("2026-06-30"), defaultFormat: .json)
            #expect(refused.status == 400 && refused.body.contains("invalid parameter by: "), "\(kind) by=\(by)")
        }

        let service = ReportService(connection: database.connection)
        for kind in ReportKind.allCases {
            let report = try service.report(kind, app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
            #expect(report.tables.map(\.name) == kind.tableNames, "what table= may name is what \(kind) has")
        }
        let noSuchTable = ReportEndpoint.respond(
            kind: "funnel", parameters: ["app": "a", "table": "utm"], connection: database.connection,
            today: day("2026-06-30"), defaultFormat: .json)
        #expect(noSuchTable.status == 400 && noSuchTable.exitCode == 64)
        #expect(noSuchTable.body.contains("invalid parameter table: the funnel report has funnel, not utm"))
        // `table=` (present, empty) is refused too, and the message says what was given.
        let emptyTable = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "a", "table": ""], connection: database.connection,
            today: day("2026-06-30"), defaultFormat: .json)
        #expect(emptyTable.status == 400)
        #expect(emptyTable.body.contains("the links report has links and utm, not an empty name"), "\(emptyTable.body)")

        for bad in ["", String(repeating: "/a", count: 1025)] {
            let refused = ReportEndpoint.respond(
                kind: "links", parameters: ["app": "a", "path": bad], connection: database.connection,
                today: day("2026-06-30"), defaultFormat: .json)
            #expect(
                refused.status == 400
                    && refused.body.hasPrefix(#"{"error":"invalid_parameter","message":"invalid parameter path: "#))
        }
    }

    @Test("without to, a report ends today in the app's time zone, not in UTC (either side of UTC)")
    func defaultEndIsTheAppsToday() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        // 14 hours ahead of UTC and 11 behind: at any instant, one of the two is on another date than UTC.
        let zones = ["east": "Pacific/Kiritimati", "west": "Pacific/Pago_Pago"]
        for (app, zone) in zones { try fixture.app(app, timeZone: zone) }
        var differsFromUTC = false
        for (app, zone) in zones.sorted(by: { $0.key < $1.key }) {
            let before = Self.today(in: zone)
            let response = ReportEndpoint.respond(
                kind: "links", parameters: ["app": app], connection: database.connection, defaultFormat: .json)
            let after = Self.today(in: zone)
            #expect(response.status == 200, "\(response.body)")
            let body = try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any] ?? [:]
            let to = try #require(body["to"] as? String)
            // Bracketed: the date may turn between the two readings.
            #expect(to == before || to == after, "\(app): to \(to), the app's today \(before)")
            if to != Self.today(in: "UTC") { differsFromUTC = true }
            let from = try #require(body["from"] as? String)
            #expect(day(from).adding(days: 29) == day(to))
            // With an explicit end, that end.
            let given = ReportEndpoint.respond(
                kind: "links", parameters: ["app": app, "to": "2026-06-30"], connection: database.connection,
                defaultFormat: .json)
            #expect(given.body.contains(#""from":"2026-06-01","to":"2026-06-30""#), "\(given.body)")
        }
        #expect(differsFromUTC, "neither zone was on another date than UTC, so the test proved nothing")
    }

    /// Today's date (`YYYY-MM-DD`) in the IANA time zone `zone`, by Foundation's own tables.
    private static func today(in zone: String) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let parts = calendar.dateComponents([.year, .month, .day], from: Date())
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }
}
