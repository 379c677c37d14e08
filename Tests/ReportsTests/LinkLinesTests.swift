import Foundation
import Postgres
import Reports
import TestSupport
import Testing

/// `ReportService.report(.links, ...)` (what the API and `report links` serve) writes its tables from
/// the stored summary lines; `ReportService.links` decodes the same lines into rows (what the daily
/// job, the totals and the other tests read). They must print the same report in every format.
@Suite struct LinkLinesTests {
    private func expectSameReport(_ service: ReportService, path: String? = nil) throws {
        let (from, to) = (day("2026-06-01"), day("2026-06-30"))
        let rows = try service.links(app: "a", from: from, to: to, path: path)
        let lines = try service.report(.links, app: "a", from: from, to: to, path: path)
        #expect(!rows.rows.isEmpty && !rows.utm.isEmpty)
        expectSameOutput(lines, as: rows, "path \(path ?? "(all)")")
    }

    @Test("the lines written as the report are the decoded rows' report, in JSON, CSV and the table")
    func sameAsRows() throws {
        let database = try Database()
        defer { database.close() }
        try loadAwkwardWorld(Fixture(database.connection))
        let service = ReportService(connection: database.connection)
        try expectSameReport(service)
        try expectSameReport(service, path: "/odd " + #"say "hi""#)
        // One table of the query form (`?table=utm`), as the API selects it.
        let query = try service.query(
            ["app": "a", "from": "2026-06-01", "to": "2026-06-30", "table": "utm"], defaultFormat: .json)
        let utm = ReportRenderer.render(try service.report(.links, query), as: .json)
        #expect(utm.contains(#""tables":{"utm":["#) && !utm.contains(#""links":["#))
        #expect(utm.contains(#""utm_source":"say \"hi\"""#), "\(utm)")
    }

    @Test("a report without `to` fails when the app's today cannot be read, instead of ending at today in UTC")
    func defaultEndNeedsTheDatabase() throws {
        let database = try Database()
        defer { database.close() }
        try Fixture(database.connection).app("a", timeZone: "Asia/Tokyo")
        let service = ReportService(connection: database.connection)
        #expect(try service.query(["app": "a"], defaultFormat: .json).to >= ReportDay.todayUTC)
        // A dropped connection (a timeout would do the same): until 2026-12-05 the failure read as
        // "today in UTC", which for Tokyo from 15:00 UTC on left the app's current day out.
        database.connection.close()
        #expect(throws: ReportError.self) { try service.query(["app": "a"], defaultFormat: .json) }
    }

    @Test("names in another order than Swift's, repeated names, empty maps: written as the rows write them")
    func namesInCollationOrder() throws {
        let database = try Database()
        defer { database.close() }
        try loadAwkwardWorld(Fixture(database.connection))
        // What an en_US collation's array_agg(... ORDER BY name) gives (see SummaryDecodingTests).
        try database.connection.execute(
            """
            UPDATE rollup_link_summary SET event_names = '{a_y,B_x,_z,B_x}', event_counts = '{1,2,3,4}',
                event_counts_ios = '{1,0,3,0}', event_counts_android = '{0,2,0,4}',
                revenue_currencies = '{usd,EUR}', revenue_amounts = '{1.50,2.25}',
                revenue_amounts_ios = '{1.50,0}', revenue_amounts_android = '{0,2.25}'
            WHERE app_id = 'a' AND path = '/x' AND day = '2026-06-01'
            """)
        let service = ReportService(connection: database.connection)
        try expectSameReport(service)
        let json = ReportRenderer.render(
            try service.report(.links, app: "a", from: day("2026-06-01"), to: day("2026-06-01")), as: .json)
        #expect(json.contains(#""events":{"B_x":4,"_z":3,"a_y":1}"#), "\(json)")
        #expect(json.contains(#""revenue":{"EUR":"2.25","usd":"1.50"}"#), "\(json)")
        #expect(json.contains(#""events_android":{"B_x":4,"_z":0,"a_y":0}"#), "\(json)")
    }

    @Test("a malformed stored line fails the report before any of it is written, with the line's reason")
    func malformedLines() throws {
        let database = try Database()
        defer { database.close() }
        try loadAwkwardWorld(Fixture(database.connection))
        let service = ReportService(connection: database.connection)
        let (from, to) = (day("2026-06-01"), day("2026-06-30"))
        let good = try database.connection.query(
            "SELECT line, platform_line FROM rollup_link_summary WHERE app_id = 'a' AND path = '/x' AND day = '2026-06-01'"
        ).first
        let line = try #require(try good?["line", as: String.self])
        let platforms = try #require(try good?["platform_line", as: String.self])
        // The stored lines are written by triggers; an analyst's UPDATE of a column would rewrite them.
        try database.connection.execute("ALTER TABLE rollup_link_summary DISABLE TRIGGER USER")
        func store(_ lines: [String]) throws {
            try database.connection.execute(
                """
                UPDATE rollup_link_summary SET line = \(lines[0]), platform_line = \(lines[1])
                WHERE app_id = 'a' AND path = '/x' AND day = '2026-06-01'
                """)
        }
        let broken: [[String]] = [
            [line.replacingOccurrences(of: ",0,", with: ",x,"), platforms],  // a count that is not a number
            [String(line.dropLast(3)), platforms],  // cut short
            [line + "{1}", platforms],  // something after the end
            [String(line.dropLast()) + ",0.500000}", platforms],  // UTM arrays of different lengths
            [line, "{1}" + platforms],  // a platform split longer than its names
            [line, String(platforms.dropLast(1))],  // an array left open
            [line, platforms.replacingOccurrences(of: "}{", with: "},{")],  // a stray comma
        ]
        try expectRefused(
            broken, good: [line, platforms], store: store, source: "report_link_summary_lines",
            served: { try service.report(.links, app: "a", from: from, to: to) },
            rows: { try service.links(app: "a", from: from, to: to) })
        try expectSameReport(service)
    }
}
