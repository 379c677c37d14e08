import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct ConnectionTests {
    @Test("connections name themselves in pg_stat_activity and use UTC ISO timestamps")
    func sessionSettings() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let row = try #require(
            try connection.query(
                """
                select current_setting('application_name') as app, current_setting('TimeZone') as tz,
                       current_setting('DateStyle') as ds, current_schema() as schema
                """
            ).first)
        #expect(try row["app", as: String.self] == "detour-analytics")
        #expect(try row["tz", as: String.self] == "UTC")
        #expect(try row["ds", as: String.self].hasPrefix("ISO"))
        #expect(try row["schema", as: String.self] == db.schema)
        let named = try Connection(url: db.url + "&application_name=aggregator")
        defer { named.close() }
        #expect(try named.query("select current_setting('application_name') as a").first?["a", as: String.self] == "aggregator")
    }

    @Test("keyword connection strings are accepted as well as URLs")
    func keywordString() throws {
        let error = #expect(throws: PostgresError.self) {
            try Connection(url: "host=127.0.0.1 port=1 dbname=detour connect_timeout=2")
        }
        guard case .connection(let message) = error else {
            Issue.record("expected a connection error")
            return
        }
        #expect(message.contains("port 1"))
        #expect(TestDatabase.withSearchPath("host=h dbname=d", schema: "s") == "host=h dbname=d options='-csearch_path=s'")
        #expect(TestDatabase.withSearchPath("postgresql://u@h/d", schema: "s") == "postgresql://u@h/d?options=-csearch_path%3Ds")
    }
}
