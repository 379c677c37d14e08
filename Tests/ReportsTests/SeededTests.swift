import Postgres
import Reports
import Testing

@Suite struct SeededTests {
    @Test("a seeded history: the compact reports equal the per-row views, and a day's refresh equals the rebuild")
    func seededHistory() throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        try Fixture(connection).app("bench")
        let end = day("2026-07-01")
        let counts = try ReportSeed.populate(
            connection: connection, app: "bench", rows: 4000, links: 20, days: 21, end: end)
        #expect(counts.events > 2000 && counts.clicks > 200 && counts.matches > 20)
        let service = ReportService(connection: connection)
        try service.rebuild()
        let rebuilt = try snapshot(connection)

        let from = end.adding(days: -21)
        let to = end.adding(days: -1)
        let links = try service.links(app: "bench", from: from, to: to)
        #expect(links.rows.count > 50 && links.rows.contains { !$0.revenue.isEmpty } && !links.utm.isEmpty)
        #expect(links == (try service.linksFromViews(app: "bench", from: from, to: to)))
        #expect(
            try service.attribution(app: "bench", from: from, to: to)
                == service.attributionFromViews(app: "bench", from: from, to: to))
        #expect(
            try service.funnel(app: "bench", from: from, to: to)
                == service.funnelFromViews(app: "bench", from: from, to: to))
        #expect(
            try service.retention(app: "bench", from: from, to: to)
                == service.retentionFromViews(app: "bench", from: from, to: to))

        // Refreshing days again (the incremental unit of work) leaves every rollup as the rebuild made it.
        for offset in [1, 3, 8] {
            try connection.execute("SELECT rollup_refresh_day('bench', \(end.adding(days: -offset).iso8601)::date)")
        }
        let refreshed = try snapshot(connection)
        for (relation, lines) in refreshed {
            #expect(lines == rebuilt[relation], "\(relation) differs after refreshing days")
        }
    }
}
