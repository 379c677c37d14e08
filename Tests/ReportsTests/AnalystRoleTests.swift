import Postgres
import Reports
import Testing

@Suite struct AnalystRoleTests {
    @Test("detour_analyst reads every report view and cannot read raw tables or write anything")
    func analyst() throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        try loadSmallWorld(Fixture(connection))
        try connection.execute("SET ROLE detour_analyst")
        defer { _ = try? connection.execute("RESET ROLE") }

        let views = [
            "report_link_daily", "report_link_daily_events", "report_link_daily_revenue", "report_link_daily_utm",
            "report_installs_daily", "report_attribution", "report_attribution_events", "report_attribution_revenue",
            "report_funnel", "report_funnel_definitions", "report_retention", "report_watermark", "report_link_summary",
            "report_funnel_summary", "report_attribution_summary", "report_retention_summary",
            "report_link_summary_lines", "report_attribution_summary_lines", "report_funnel_summary_lines",
            "report_apps",
        ]
        for view in views {
            let rows = try connection.query(SQL(stringLiteral: "SELECT count(*) AS n FROM \(view)"))
            #expect(try rows.first?["n", as: Int.self] ?? 0 > 0, "\(view) is empty or unreadable")
        }
        // The service's queries run as the analyst too.
        let report = try ReportService(connection: connection).links(
            app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        #expect(report.rows.count == 5)

        for relation in ["events", "clicks", "matches", "devices", "apps", "rollup_link_daily", "load_checkpoints"] {
            #expect(
                sqlState { _ = try connection.query(SQL(stringLiteral: "SELECT * FROM \(relation) LIMIT 1")) }
                    == "42501",
                "\(relation) is readable")
        }
        #expect(
            sqlState {
                try connection.execute(
                    "INSERT INTO events (app_id, event_id, kind, name, device_id, event_time, received_at) VALUES ('a', 'x', 'event', 'n', 'd', now(), now())"
                )
            } == "42501")
        // A view of aggregates is not updatable: PostgreSQL refuses before checking privileges (55000).
        #expect(["42501", "55000"].contains(sqlState { try connection.execute("DELETE FROM report_link_daily") }))
        #expect(sqlState { try connection.execute("SELECT rebuild_rollups()") } == "42501")
        #expect(sqlState { try connection.execute("CREATE TABLE analyst_scratch (x int)") } == "42501")
    }

    private func sqlState(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let PostgresError.server(sqlState, _, _, _, _) {
            return sqlState
        } catch {
            return "\(error)"
        }
    }
}
