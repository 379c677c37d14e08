import Foundation
import Postgres
import TestSupport
import Testing

/// Issue 9, "isolation": one app's keys cannot act for another app; publishable keys cannot post
/// link events; keys are stored hashed; no key, good or bad, ever reaches the log.
@Suite(.serialized)
struct IsolationTests {
    static let event = Array(HostileCorpus.event(name: "isolation").utf8)
    static let link = Array(
        #"{"clicks":[{"click_id":"clk_iso","url":"https://acme.godetour.link/abc","timestamp":"2026-06-01T10:20:30Z","platform":"ios","kind":"web"}]}"#
            .utf8)

    @Test(
        "app A's keys cannot write or read app B's data, publishable keys post no link events and read no reports, and no key reaches the log"
    )
    func keysStayInTheirApp() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-chaos-isolation")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let a = try AppKeys.create(id: "iso-a", environment: environment)
        let b = try AppKeys.create(id: "iso-b", environment: environment)
        let pipeline = RunningPipeline(environment: environment)
        try pipeline.start()
        defer { pipeline.stop() }
        let port = pipeline.port

        func post(_ path: String, key: String, app: String, body: [UInt8] = Self.event) -> (Int, String?) {
            let response = RawHTTP.post(port: port, path, key: key, app: app, body: body)
            return (response?.status ?? 0, response?.errorCode)
        }
        // Cross-app writes.
        for path in ["/api/analytics/event", "/api/analytics/retention"] {
            #expect(
                post(path, key: a.publishable, app: b.id) == (403, "key_not_allowed"),
                "A's publishable key as B on \(path)")
            #expect(post(path, key: a.secret, app: b.id) == (403, "key_not_allowed"), "A's secret key as B on \(path)")
        }
        let batch = Array(#"{"batch":[\#(HostileCorpus.event(name: "isolation"))]}"#.utf8)
        #expect(post("/api/analytics/batch", key: a.publishable, app: b.id, body: batch) == (403, "key_not_allowed"))
        #expect(
            post("/api/link/events", key: a.secret, app: b.id, body: Self.link) == (403, "key_not_allowed"),
            "A's secret key as B on the link route")
        // Publishable keys never post link events, even for their own app.
        #expect(post("/api/link/events", key: a.publishable, app: a.id, body: Self.link) == (403, "key_not_allowed"))
        #expect(post("/api/link/events", key: b.publishable, app: b.id, body: Self.link) == (403, "key_not_allowed"))
        // The rightful owners succeed.
        #expect(post("/api/analytics/event", key: a.publishable, app: a.id).0 == 200)
        #expect(post("/api/analytics/event", key: b.publishable, app: b.id).0 == 200)
        #expect(post("/api/link/events", key: a.secret, app: a.id, body: Self.link).0 == 200)
        // Reports (`GET /api/reports/<kind>`, secret key of X-App-ID only): no key reads another
        // app's reports, by header or by the `app` parameter; a publishable key reads none; A's
        // secret key reads A's.
        func report(_ kind: String, key: String, app: String, query: String = "") -> (Int, String?) {
            let request = RawHTTP.request(
                "GET", "/api/reports/\(kind)?format=json\(query)",
                headers: [("Authorization", "Bearer \(key)"), ("X-App-ID", app)])
            let response = RawHTTP.exchange(port: port, request, timeout: 60)
            return (response?.status ?? 0, response?.errorCode)
        }
        for kind in ["links", "funnel", "retention", "attribution"] {
            #expect(
                report(kind, key: a.secret, app: b.id) == (403, "key_not_allowed"),
                "A's secret key as B reads B's \(kind)")
            #expect(report(kind, key: a.publishable, app: b.id).0 == 403, "A's publishable key as B reads B's \(kind)")
            #expect(
                report(kind, key: a.secret, app: a.id, query: "&app=\(b.id)") == (403, "key_not_allowed"),
                "A's secret key reads B's \(kind) by parameter")
            #expect(
                report(kind, key: a.publishable, app: a.id) == (403, "key_not_allowed"),
                "a publishable key reads \(kind)")
            #expect(report(kind, key: a.secret, app: a.id).0 == 200, "A's secret key reads A's \(kind)")
        }
        // A key that differs from a real one in its last character is unknown.
        let forged = String(a.secret.dropLast()) + (a.secret.last == "A" ? "B" : "A")
        #expect(post("/api/analytics/event", key: forged, app: a.id) == (401, "invalid_key"))
        // Bad keys of every shape, to check they are not logged either.
        let badKeys = ["pk_BADKEYNEVERLOGGED0123456789", "sk_ANOTHERBADKEYNEVERLOGGED987", forged]
        for bad in badKeys { _ = post("/api/analytics/event", key: bad, app: a.id) }

        // Nothing crossed over: B's rows are B's own event only, after loading.
        #expect(pipeline.stop() == 0)
        try Loaded.drain(environment: environment)
        let connection = try database.connect()
        defer { connection.close() }
        let counts = try connection.query("SELECT app_id, count(*) AS n FROM events GROUP BY app_id ORDER BY app_id")
            .map { (try $0["app_id", as: String.self], try $0["n", as: Int.self]) }
        #expect(counts.map(\.0) == ["iso-a", "iso-b"] && counts.map(\.1) == [1, 1], "rows per app: \(counts)")

        // Keys are stored hashed: no column of api_keys holds a key.
        let stored = try connection.query("SELECT row_to_json(k)::text AS row FROM api_keys k").map {
            try $0["row", as: String.self]
        }
        #expect(stored.count >= 4)
        for key in [a.publishable, a.secret, b.publishable, b.secret] {
            #expect(!stored.contains { $0.contains(key) }, "api_keys holds a key in clear")
            #expect(!stored.contains { $0.contains(String(key.suffix(16))) }, "api_keys holds the secret part of a key")
        }

        // Secrets never appear in the log, on stdout, or in the key cache file.
        let cache = (try? String(contentsOfFile: data.path + "/keys.json", encoding: .utf8)) ?? ""
        let log = pipeline.log
        for secret in [a.publishable, a.secret, b.publishable, b.secret] + badKeys {
            #expect(!log.contains(secret), "the log holds a key")
            #expect(!log.contains(String(secret.suffix(16))), "the log holds part of a key")
            #expect(!cache.contains(secret), "keys.json holds a key")
        }
        #expect(!log.isEmpty, "the pipeline logged something (the check above is not vacuous)")
    }

    @Test("the analyst role reads the report views and nothing else, and writes nothing")
    func analystRole() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        let exists = try connection.query("SELECT count(*) AS n FROM pg_roles WHERE rolname = 'detour_analyst'")
        guard try exists[0]["n", as: Int.self] == 1 else {
            Issue.record("role detour_analyst missing")
            return
        }
        // Every relation of the schema: SELECT only on the report views, no writes anywhere.
        let relations = try connection.query(
            """
            SELECT c.relname AS name, c.relkind::text AS kind,
                   has_table_privilege('detour_analyst', c.oid, 'SELECT') AS can_select,
                   has_table_privilege('detour_analyst', c.oid, 'INSERT') OR has_table_privilege('detour_analyst', c.oid, 'UPDATE')
                       OR has_table_privilege('detour_analyst', c.oid, 'DELETE') OR has_table_privilege('detour_analyst', c.oid, 'TRUNCATE') AS can_write
            FROM pg_class c WHERE c.relnamespace = \(database.schema)::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
            """
        ).map {
            (
                try $0["name", as: String.self], try $0["kind", as: String.self], try $0["can_select", as: Bool.self],
                try $0["can_write", as: Bool.self]
            )
        }
        #expect(relations.contains { $0.0 == "api_keys" } && relations.contains { $0.0 == "events" })
        for (name, kind, canSelect, canWrite) in relations {
            let isReportView = kind == "v" && name.hasPrefix("report_")
            #expect(canSelect == isReportView, "detour_analyst SELECT on \(name) (\(kind)): \(canSelect)")
            #expect(!canWrite, "detour_analyst may write \(name)")
        }
        let views = relations.filter { $0.1 == "v" && $0.0.hasPrefix("report_") }.map(\.0)
        Scale.record("analyst_report_views", views.count)
        // And as the role itself: a view reads, a raw table and the keys are refused.
        try connection.execute("SET ROLE detour_analyst")
        defer { _ = try? connection.execute("RESET ROLE") }
        if let view = views.first {
            #expect(throws: Never.self, "detour_analyst reads \(view)") {
                _ = try connection.query("SELECT * FROM \(identifier: view) LIMIT 1")
            }
        }
        for table in ["events", "api_keys"] {
            #expect(throws: (any Error).self, "detour_analyst reads \(table)") {
                _ = try connection.query("SELECT * FROM \(identifier: table) LIMIT 1")
            }
        }
    }
}
