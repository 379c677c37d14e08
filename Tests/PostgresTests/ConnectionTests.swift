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
        #expect(
            try named.query("select current_setting('application_name') as a").first?["a", as: String.self]
                == "aggregator")
    }

    @Test(
        "every connection sets TCP keepalives unless its URL does, so a server gone mid-query is noticed in seconds"
    )
    func keepalivesByDefault() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        // As the CLI and the aggregator open theirs: nothing but the URL.
        let plain = try Connection(url: db.url)
        defer { plain.close() }
        let keepalives = ["keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count"]
        #expect(keepalives.map { plain.parameters[$0] } == ["1", "10", "5", "3"], "\(plain.parameters)")
        #expect(plain.parameters["tcp_user_timeout"] ?? "0" == "0", "\(plain.parameters)")
        let own = try Connection(url: db.url + "&keepalives_idle=60&keepalives_count=9")
        defer { own.close() }
        #expect(own.parameters["keepalives_idle"] == "60" && own.parameters["keepalives_count"] == "9")
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
        #expect(
            Connection.withSearchPath("host=h dbname=d", schema: "s") == "host=h dbname=d options='-csearch_path=s'")
        #expect(
            Connection.withSearchPath("postgresql://u@h/d", schema: "s")
                == "postgresql://u@h/d?options=-csearch_path%3Ds")
    }

    @Test("the session reads results and writes SQL by fixed settings, whatever the role or database sets")
    func sessionSettingsPinned() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        // As a role or database configured otherwise would have them (ALTER ROLE ... SET ...).
        let options =
            "-cstandard_conforming_strings=off -cbytea_output=escape -cIntervalStyle=sql_standard -cDateStyle=German"
            + " -cTimeZone=Asia/Tokyo"
        let url =
            db.baseURL + (db.baseURL.contains("?") ? "&" : "?") + "options="
            + options.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let connection = try Connection(url: url)
        defer { connection.close() }
        let expected = [
            "standard_conforming_strings": "on", "bytea_output": "hex", "IntervalStyle": "postgres",
            "DateStyle": "ISO, YMD", "TimeZone": "UTC",
        ]
        for (name, value) in expected {
            #expect(try connection.query("SELECT current_setting(\(name)) AS v").first?["v", as: String.self] == value)
        }
        // What standard_conforming_strings changes: off, this literal was 'asb' (the migrations'
        // regular expressions, such as the revenue parser's \s, lost their backslashes).
        #expect(try connection.query(#"SELECT length('a\sb') AS n"#).first?["n", as: Int.self] == 4)
    }

    /// libpq quotes what it cannot parse in a connection string, and that can be the password,
    /// which then went to the logs (`load.failing`, `keys.refresh_failed` every reload) and stderr.
    @Test(
        "a malformed connection string's error names no part of its password",
        arguments: [
            // (connection string, the password's parts that must not appear, what libpq's message keeps)
            ("postgresql://detour:Zq7%ZZWx9@127.0.0.1:1/detour", ["Zq7", "Wx9"], "invalid percent-encoded token"),
            ("postgresql://detour:Zq7/Wx9@127.0.0.1:1/detour", ["Zq7", "Wx9"], "connection option \"port\""),
            ("postgresql://detour@127.0.0.1:1/detour?password=Zq7%ZZWx9", ["Zq7", "Wx9"], "percent-encoded"),
            ("host=127.0.0.1 port=1 password=Zq7 Wx9 dbname=detour", ["Zq7", "Wx9"], "missing \"=\" after"),
            ("postgresql://detour:Zq7Wx9@127.0.0.1:1/detour?sslmode=bogus", ["Zq7", "Wx9"], "\"bogus\""),
            // A quote in the password: libpq's closing quote was paired with it (until 2026-12-05).
            ("postgresql://detour:Xy\"7%q!2@127.0.0.1:1/detour", ["Xy", "7%q!2"], "invalid percent-encoded token"),
            // An unencoded @: libpq quotes the password's tail as part of the host name.
            ("postgresql://detour:Qp@ss9@127.0.0.1:1/detour", ["Qp", "ss9"], "could not translate host name"),
        ])
    func malformedURLHidesPassword(url: String, parts: [String], kept: String) throws {
        let error = #expect(throws: PostgresError.self) { try Connection(url: url, connectTimeout: 2) }
        guard case .connection(let message) = error else {
            Issue.record("expected a connection error, got \(String(describing: error))")
            return
        }
        for part in parts {
            #expect(!message.contains(part), "\(part) in: \(message)")
        }
        #expect(message.contains(kept), "\(message)")
    }
}
