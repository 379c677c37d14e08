import Foundation
import Postgres
import Reports
import TestSupport
import Testing

/// `ReportService.report(.funnel, ...)` (what the API and `report funnel` serve) writes its table
/// from the stored summary lines; `ReportService.funnel` decodes the same lines into rows (what the
/// daily job and the other tests read). They must print the same report in every format.
@Suite struct FunnelLinesTests {
    private let from = day("2026-06-01")
    private let to = day("2026-06-30")

    /// The awkward world with app funnels whose names and step names need quoting, escaping or both,
    /// an event-first funnel with organic devices, and funnel ids that sort in more than one way.
    private func funnelWorld(_ database: Database) throws {
        let funnels: [(id: String, name: String, steps: [String])] = [
            ("checkout", #"Checkout "now", é"#, ["view_item", "add_to_cart", "purchase"]),
            ("B.odd", "Odd, names\n", ["a,b", "purchase"]),
            ("awk", #""Awk" \ ward"#, [#"say "hi""#, "purchase"]),
            ("a_slash", "NULL", [#"back\slash"#, "purchase", "1,\n2"]),
            ("braces", "{x}", ["{x}", "purchase"]),
            ("null_name", "", ["NULL", "purchase"]),
            ("empty", "Empty step", ["", "purchase"]),
        ]
        for funnel in funnels {
            try database.connection.execute(
                "INSERT INTO funnels (app_id, funnel_id, name, steps) VALUES ('a', \(funnel.id), \(funnel.name), \(funnel.steps)::text[])"
            )
        }
        let fixture = Fixture(database.connection)
        try loadAwkwardWorld(fixture)
        // A link whose path starts with a combining mark: with the line's `+` it makes one character.
        fixture.click("km", path: "\u{301}m", at: "2026-06-03T10:00:00Z")
        fixture.match("km", at: "2026-06-03T10:05:00Z")
        try fixture.load()
    }

    private func expectSameReport(_ service: ReportService, path: String? = nil) throws {
        let rows = try service.funnel(app: "a", from: from, to: to, path: path)
        let lines = try service.report(.funnel, app: "a", from: from, to: to, path: path)
        #expect(!rows.rows.isEmpty)
        expectSameOutput(lines, as: rows, "path \(path ?? "(all)")")
    }

    @Test("the lines written as the funnel report are the decoded rows' report, in JSON, CSV and the table")
    func sameAsRows() throws {
        let database = try Database()
        defer { database.close() }
        try funnelWorld(database)
        let service = ReportService(connection: database.connection)
        try expectSameReport(service)
        try expectSameReport(service, path: "/x")
        try expectSameReport(service, path: "/odd " + #"say "hi""#)
        // The rows are what the views say (order included), so the lines are too.
        let rows = try service.funnel(app: "a", from: from, to: to)
        #expect(rows == (try service.funnelFromViews(app: "a", from: from, to: to)))
        // Every funnel is there, the default first, then by id; organic devices last in their funnel.
        var ids: [String] = []
        for row in rows.rows where ids.last != row.funnelID { ids.append(row.funnelID) }
        #expect(ids == ["default", "B.odd", "a_slash", "awk", "braces", "checkout", "empty", "null_name"])
        let checkout = rows.rows.filter { $0.funnelID == "checkout" }
        #expect(checkout.contains { $0.path == nil } && checkout.last?.path == nil)
        #expect(rows.rows.contains { $0.funnelID == "empty" && $0.stepName == "" && $0.devices == 1 })
        #expect(rows.rows.contains { $0.path == "\u{301}m" && $0.stepName == "click" && $0.devices == 1 })

        let json = ReportRenderer.render(try service.report(.funnel, app: "a", from: from, to: to), as: .json)
        for expected in [
            #""funnel_name":"\"Awk\" \\ ward","path":"/odd say \"hi\"""#,
            #""step_name":"say \"hi\"","devices":1"#,
            #""funnel_id":"B.odd","funnel_name":"Odd, names\n""#,
            #""step_name":"1,\n2""#,
            #""funnel_id":"null_name","funnel_name":"","path":"/odd NULL""#,
            #""step_name":"NULL","devices":1"#,
            #""step_name":"","devices":1"#,
            #""path":null,"day":"2026-06-01","step":1,"step_name":"view_item""#,
        ] {
            #expect(json.contains(expected), "\(expected)")
        }
    }

    @Test("a malformed stored funnel line fails the report before any of it is written, with the line's reason")
    func malformedLines() throws {
        let database = try Database()
        defer { database.close() }
        try funnelWorld(database)
        let service = ReportService(connection: database.connection)
        let stored = try database.connection.query(
            "SELECT line FROM rollup_funnel_summary WHERE app_id = 'a' AND funnel_id = 'default' AND path = '/x' AND day = '2026-06-01'"
        )
        let line = try #require(try stored.first?["line", as: String.self])
        func store(_ text: String) throws {
            try database.connection.execute(
                "UPDATE rollup_funnel_summary SET line = \(text) WHERE app_id = 'a' AND funnel_id = 'default' AND path = '/x' AND day = '2026-06-01'"
            )
        }
        #expect(line.hasPrefix("2026-06-01,{1,2,3,4,5}{click,install,") && line.hasSuffix("+/x"), "\(line)")
        // The stored lines are written by triggers; an analyst's UPDATE of a column would rewrite them.
        try database.connection.execute("ALTER TABLE rollup_funnel_summary DISABLE TRIGGER USER")
        let broken: [String] = [
            line.replacingOccurrences(of: "{1,2,", with: "{x,2,"),  // a step that is not a number
            line.replacingOccurrences(of: "{1,2,3,4,5}", with: "{1,2,3,4,5,6}"),  // more steps than names
            line.replacingOccurrences(of: "purchase}", with: "purchase,refund}"),  // more names than steps
            line.replacingOccurrences(of: "}{click", with: "{click"),  // an array left open
            line.replacingOccurrences(of: "}{click", with: "},{click"),  // a stray comma
            String(line.dropLast(3)),  // cut short: no link
            String(line.dropLast(3)) + "*/x",  // neither `-` nor `+` before the link
            String(line.dropLast(2)),  // `+` and no link
            "2026-13-01" + String(line.dropFirst(10)),  // not a day
        ]
        try expectRefused(
            broken, good: line, store: store, source: "report_funnel_summary_lines",
            served: { try service.report(.funnel, app: "a", from: from, to: to) },
            rows: { try service.funnel(app: "a", from: from, to: to) })
        try expectSameReport(service)
    }
}
