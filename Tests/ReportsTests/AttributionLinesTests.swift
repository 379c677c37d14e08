import Foundation
import Postgres
import Reports
import TestSupport
import Testing

/// `ReportService.report(.attribution, ...)` (what the API and `report attribution` serve) writes its
/// attribution table from the stored summary lines; `ReportService.attribution` decodes the same
/// lines into rows (what the daily job and the other tests read). They must print the same report
/// in every format.
@Suite struct AttributionLinesTests {
    private let from = day("2026-06-01")
    private let to = day("2026-06-30")

    private func expectSameReport(_ service: ReportService, path: String? = nil) throws {
        let rows = try service.attribution(app: "a", from: from, to: to, path: path)
        let lines = try service.report(.attribution, app: "a", from: from, to: to, path: path)
        #expect(!rows.rows.isEmpty && !rows.installs.isEmpty)
        expectSameOutput(lines, as: rows, "path \(path ?? "(all)")")
    }

    @Test("the lines written as the attribution report are the decoded rows' report, in JSON, CSV and the table")
    func sameAsRows() throws {
        let database = try Database()
        defer { database.close() }
        try loadAwkwardWorld(Fixture(database.connection))
        let service = ReportService(connection: database.connection)
        try expectSameReport(service)
        try expectSameReport(service, path: "/x")
        try expectSameReport(service, path: "/odd " + #"say "hi""#)
        #expect(
            try service.attribution(app: "a", from: from, to: to)
                == service.attributionFromViews(app: "a", from: from, to: to))
        let json = ReportRenderer.render(try service.report(.attribution, app: "a", from: from, to: to), as: .json)
        for expected in [
            #""path":"/odd say \"hi\"","day":"2026-06-02","matched_installs":1,"attributed_installs":1"#,
            #""cohort_events":{"purchase":1,"say \"hi\"":1}"#,
            #""cohort_events":{"1,\n2":1,"purchase":1}"#,
            #""cohort_revenue":{"EUR":"7.25"}"#,
            #""installs":[{"day":"2026-06-01","installs":4"#,
        ] {
            #expect(json.contains(expected), "\(expected)")
        }
    }

    @Test("names in another order than Swift's, repeated names, empty maps: written as the rows write them")
    func namesInCollationOrder() throws {
        let database = try Database()
        defer { database.close() }
        try loadAwkwardWorld(Fixture(database.connection))
        // What an en_US collation's array_agg(... ORDER BY name) gives (see LinkReportTests).
        try storeAttributionNamesInCollationOrder(database.connection)
        let service = ReportService(connection: database.connection)
        try expectSameReport(service)
        let json = ReportRenderer.render(
            try service.report(.attribution, app: "a", from: from, to: from), as: .json)
        #expect(json.contains(#""cohort_events":{"B_x":4,"_z":3,"a_y":1},"activity_events":{"A":6,"b":5}"#), "\(json)")
        #expect(json.contains(#""cohort_revenue":{"EUR":"2","usd":"3.25"},"activity_revenue":{}"#), "\(json)")
    }

    @Test("a malformed stored attribution line fails the report before any of it is written, with the line's reason")
    func malformedLines() throws {
        let database = try Database()
        defer { database.close() }
        try loadAwkwardWorld(Fixture(database.connection))
        let service = ReportService(connection: database.connection)
        let stored = try database.connection.query(
            "SELECT line FROM rollup_attribution_summary WHERE app_id = 'a' AND path = '/x' AND day = '2026-06-01'")
        let line = try #require(try stored.first?["line", as: String.self])
        #expect(
            line.hasPrefix("2,/x2026-06-01,2,2,")
                && line.contains("{add_to_cart,purchase,refund,sign_up,view_item}{1,2,1,1,1}{EUR,USD}"), "\(line)")
        func store(_ text: String) throws {
            try database.connection.execute(
                "UPDATE rollup_attribution_summary SET line = \(text) WHERE app_id = 'a' AND path = '/x' AND day = '2026-06-01'"
            )
        }
        // The stored lines are written by triggers; an analyst's UPDATE of a column would rewrite them.
        try database.connection.execute("ALTER TABLE rollup_attribution_summary DISABLE TRIGGER USER")
        let broken: [String] = [
            line.replacingOccurrences(of: "2026-06-01,2,", with: "2026-06-01,x,"),  // a count that is not a number
            line.replacingOccurrences(of: "{1,2,1,1,1}", with: "{1,2,1,1,1,3}"),  // more counts than names
            line.replacingOccurrences(of: "{1,2,1,1,1}", with: "{1,2,1,1}"),  // fewer counts than names
            line.replacingOccurrences(of: "{EUR,USD}", with: "{EUR}"),  // fewer currencies than amounts
            line.replacingOccurrences(of: "view_item}{1,", with: "view_item{1,"),  // an array left open
            line.replacingOccurrences(of: "view_item}{1,", with: "view_item},{1,"),  // a stray comma
            String(line.dropLast(2)),  // cut short
            line + "{}",  // something after the end
            "-1," + line.dropFirst(4),  // no link
        ]
        try expectRefused(
            broken, good: line, store: store, source: "report_attribution_summary_lines",
            served: { try service.report(.attribution, app: "a", from: from, to: to) },
            rows: { try service.attribution(app: "a", from: from, to: to) })
        try expectSameReport(service)
    }
}
