import EventLog
import Foundation
import Ingest
import Postgres
import Reports
import TestSupport
import Testing

@testable import detour_analytics

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The report API on a real ingest server (127.0.0.1, ephemeral port) over a real PostgreSQL:
/// keys from `api_keys`, reports from rollups rebuilt from raw rows, through
/// `PostgresReportProvider`'s pool.
@Suite("Report API over PostgreSQL")
struct ReportAPIIntegrationTests {
    static let appA = "app_a"
    static let appB = "app_b"
    static let keys = [
        (appA, "publishable", "pk_a_1111"), (appA, "secret", "sk_a_2222"), (appB, "secret", "sk_b_3333"),
    ]

    /// Two apps with one clicked, matched and installed link each, rollups rebuilt, a watermark.
    static func seed(_ connection: Connection) throws {
        for app in [appA, appB] {
            try connection.execute("INSERT INTO apps (id, name) VALUES (\(app), \(app))")
        }
        for (app, kind, key) in keys {
            try connection.execute(
                """
                INSERT INTO api_keys (app_id, key_hash, kind, prefix)
                VALUES (\(app), \(apiKeyHash(key)), \(kind), \(String(key.prefix(5))))
                """)
        }
        for (app, path) in [(appA, "/a-only-link"), (appB, "/b-secret-link")] {
            let click = "clk_" + app
            let time = "2026-06-01T10:00:00Z"
            try connection.execute(
                "INSERT INTO click_ids (app_id, click_id, click_time) VALUES (\(app), \(click), \(time)::timestamptz)")
            try connection.execute(
                """
                INSERT INTO clicks (app_id, click_id, path, click_kind, click_time, received_at, platform)
                VALUES (\(app), \(click), \(path), 'web', \(time)::timestamptz, \(time)::timestamptz, 'ios')
                """)
        }
        try connection.execute(
            """
            INSERT INTO load_checkpoints (node, segment, frame_offset, newest_received_at)
            VALUES ('node-1', 1, 0, '2026-06-05T12:00:00Z'::timestamptz)
            """)
        try connection.execute("SELECT rebuild_rollups()")
    }

    /// The executable's own provider (ReportProvider+Postgres.swift), with its today fixed.
    static func render(_ connection: Connection, _ request: ReportRequest) -> ReportAnswer {
        PostgresReportProvider.reportAnswer(
            connection: connection, request: request, today: ReportDay(iso8601: "2026-06-30")!)
    }

    /// A server whose keys come from `database` and whose reports come from `reportURL`.
    final class Server {
        let directory: TemporaryDirectory
        let keys: KeyStore
        let log: LogWriter
        let deadLetters: LogWriter
        let provider: PostgresReportProvider
        let server: IngestServer
        var base: String { "http://127.0.0.1:\(server.port)" }

        init(database: TestDatabase, reportURL: String, threads: Int = 2) throws {
            directory = try TemporaryDirectory()
            keys = KeyStore(
                source: PostgresKeySource(url: database.url), cacheFile: directory.path + "/keys.json",
                refreshInterval: .seconds(10))
            keys.start()
            log = try LogWriter(configuration: LogConfiguration(directory: directory.path + "/segments"))
            deadLetters = try LogWriter(configuration: LogConfiguration(directory: directory.path + "/deadletter"))
            var poolConfiguration = PostgresReportProvider.Configuration()
            poolConfiguration.poolSize = 2
            poolConfiguration.connectTimeoutSeconds = 3
            provider = PostgresReportProvider(url: reportURL, configuration: poolConfiguration) {
                ReportAPIIntegrationTests.render($0, $1)
            }
            var configuration = IngestConfiguration()
            configuration.port = 0
            configuration.threads = threads
            configuration.reportThreads = 2
            try configuration.validate()
            server = try IngestServer(
                configuration: configuration, keys: keys, sink: log, deadLetterSink: deadLetters,
                reportProvider: provider)
        }

        deinit {
            server.shutdown()
            provider.close()
            keys.stop()
            log.close()
            deadLetters.close()
        }

        func get(_ path: String, key: String?, app: String = ReportAPIIntegrationTests.appA) throws -> HTTP.Response {
            var headers = ["X-App-ID": app]
            if let key { headers["Authorization"] = "Bearer \(key)" }
            return try HTTP.get(base + path, headers: headers)
        }

        /// Posts one SDK event with app A's publishable key; returns the status.
        func postEvent() throws -> Int {
            var request = URLRequest(url: URL(string: base + "/api/analytics/event")!)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer pk_a_1111", forHTTPHeaderField: "Authorization")
            request.setValue(ReportAPIIntegrationTests.appA, forHTTPHeaderField: "X-App-ID")
            request.httpBody = Data(
                #"{"event_name":"open","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
                    .utf8)
            return try HTTP.send(request).status
        }
    }

    static func json(_ response: HTTP.Response) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: response.body) as? [String: Any]) ?? [:]
    }

    /// The test's report URL: `database.url` with an `application_name` of its own, so the test
    /// finds (and terminates) only its own pool's backends among those of tests running in parallel.
    static func reportURL(_ database: TestDatabase) -> (url: String, applicationName: String) {
        let name = database.schema + "_reports"
        return (database.url + (database.url.contains("?") ? "&" : "?") + "application_name=" + name, name)
    }

    static func errorCode(_ response: HTTP.Response) -> String? {
        (json(response)["error"] as? [String: Any])?["code"] as? String
    }

    @Test("each report route answers JSON with the watermark; CSV on request; app A never sees app B's links")
    func reportsWithWatermark() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try Self.seed(connection)
        let server = try Server(database: database, reportURL: database.url)
        for kind in ["links", "funnel", "retention", "attribution"] {
            let response = try server.get("/api/reports/\(kind)?from=2026-06-01&to=2026-06-30", key: "sk_a_2222")
            #expect(response.status == 200, "\(kind): \(response.text)")
            #expect(response.headers["content-type"] == "application/json")
            let body = Self.json(response)
            #expect(body["report"] as? String == kind)
            #expect(body["app"] as? String == Self.appA)
            #expect(body["watermark"] as? String == "2026-06-05T12:00:00.000000Z")
            #expect(response.headers["x-detour-watermark"] == "2026-06-05T12:00:00.000000Z")
            #expect(!response.text.contains("/b-secret-link"))
        }
        let links = try server.get("/api/reports/links?from=2026-06-01&to=2026-06-30", key: "sk_a_2222")
        #expect(links.text.contains("/a-only-link"))
        let other = try server.get(
            "/api/reports/links?from=2026-06-01&to=2026-06-30", key: "sk_b_3333", app: Self.appB)
        #expect(other.status == 200)
        #expect(other.text.contains("/b-secret-link") && !other.text.contains("/a-only-link"))

        let csv = try server.get("/api/reports/links?from=2026-06-01&to=2026-06-30&format=csv", key: "sk_a_2222")
        #expect(csv.status == 200)
        #expect(csv.headers["content-type"] == "text/csv; charset=utf-8")
        // The CSV's rows have no place for the watermark; the header states it.
        #expect(csv.headers["x-detour-watermark"] == "2026-06-05T12:00:00.000000Z")
        #expect(csv.text.hasPrefix("path,day,"))
        #expect(csv.text.contains("/a-only-link") && !csv.text.contains("/b-secret-link"))
    }

    @Test("bad dates are 400 invalid_parameter; wrong keys are 401/403 and read nothing")
    func refusals() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try Self.seed(connection)
        let server = try Server(database: database, reportURL: database.url)
        for query in [
            "from=2026-13-01", "from=2026-06-30&to=2026-06-01", "to=yesterday", "from=2025-01-01&to=2026-06-30",
        ] {
            let response = try server.get("/api/reports/retention?" + query, key: "sk_a_2222")
            #expect(response.status == 400, "\(query)")
            #expect(Self.errorCode(response) == "invalid_parameter", "\(query)")
        }
        let typo = try server.get("/api/reports/links?form=2026-06-01", key: "sk_a_2222")
        #expect(typo.status == 400 && Self.errorCode(typo) == "invalid_parameter")
        let publishable = try server.get("/api/reports/links", key: "pk_a_1111")
        #expect(publishable.status == 403 && Self.errorCode(publishable) == "key_not_allowed")
        let otherSecret = try server.get("/api/reports/links", key: "sk_b_3333")
        #expect(otherSecret.status == 403 && Self.errorCode(otherSecret) == "key_not_allowed")
        let otherApp = try server.get("/api/reports/links?app=app_a", key: "sk_b_3333", app: Self.appB)
        #expect(otherApp.status == 403 && Self.errorCode(otherApp) == "key_not_allowed")
        let missing = try server.get("/api/reports/links", key: nil)
        #expect(missing.status == 401 && Self.errorCode(missing) == "missing_key")
        for response in [publishable, otherSecret, otherApp, missing] {
            #expect(!response.text.contains("-link"))
        }
    }

    @Test("ingest keeps answering while a report waits on a PostgreSQL lock, and the report then completes")
    func ingestServedDuringReport() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try Self.seed(connection)
        // One event loop: if the report blocked it, the ingest request below could not be answered.
        let (reportURL, applicationName) = Self.reportURL(database)
        let server = try Server(database: database, reportURL: reportURL, threads: 1)
        let locker = try database.connect()
        defer { locker.close() }
        try locker.unsafeSQL("BEGIN; LOCK TABLE apps IN ACCESS EXCLUSIVE MODE")

        let done = DispatchSemaphore(value: 0)
        let result = LockedBox<HTTP.Response?>(nil)
        let base = server.base
        Thread {
            // A long timeout: the report waits for the lock for as long as the steps below take.
            var request = URLRequest(url: URL(string: base + "/api/reports/links?from=2026-06-01&to=2026-06-30")!)
            request.setValue("Bearer sk_a_2222", forHTTPHeaderField: "Authorization")
            request.setValue(Self.appA, forHTTPHeaderField: "X-App-ID")
            result.set(try? HTTP.send(request, timeout: 120))
            done.signal()
        }.start()
        // Bounded wait until the report's backend is blocked on the lock.
        var isWaiting = false
        for _ in 0..<1200 {  // at most 60 s
            let rows = try connection.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity
                WHERE application_name = \(applicationName) AND wait_event_type = 'Lock'
                """)
            if try rows.first?["n", as: Int.self] ?? 0 > 0 {
                isWaiting = true
                break
            }
            usleep(50_000)
        }
        #expect(isWaiting)
        #expect(try server.postEvent() == 200)
        #expect(try HTTP.get(server.base + "/healthz").status == 200)
        try locker.unsafeSQL("COMMIT")
        #expect(done.wait(timeout: .now() + 20) == .success)
        #expect(result.get()?.status == 200)
        #expect(result.get()?.text.contains("/a-only-link") == true)
    }

    @Test("the API reads a report in one snapshot: a rollup pass committing while it runs shows in all of it or none")
    func oneSnapshot() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try Self.seed(connection)
        let (reportURL, _) = Self.reportURL(database)
        let server = try Server(database: database, reportURL: reportURL)
        let path = "/api/reports/links?from=2026-06-01&to=2026-06-30"
        let before = try server.get(path, key: "sk_a_2222")
        #expect(before.status == 200, "\(before.text)")
        // A pass that moves the watermark and the per-link counts, caught half way (RollupPassRace).
        let loader = try database.connect()
        defer { loader.close() }
        let pass = try RollupPassRace(on: loader)
        let during = LockedBox<HTTP.Response?>(nil)
        let done = DispatchSemaphore(value: 0)
        let base = server.base
        Thread {
            during.set(
                try? HTTP.get(base + path, headers: ["X-App-ID": Self.appA, "Authorization": "Bearer sk_a_2222"]))
            done.signal()
        }.start()
        #expect(try pass.reportWaits(), "the report never waited for the link summary")
        try pass.commit()
        #expect(done.wait(timeout: .now() + 60) == .success)
        // Until 2026-12-05 (the API's provider read outside the CLI's snapshot) it stated the old
        // watermark beside the new counts.
        #expect(during.get()?.text == before.text, "\(during.get()?.text ?? "no answer")")
        let after = try server.get(path, key: "sk_a_2222")
        #expect(after.text != before.text && after.text.contains("2026-06-05T13:00:00.000000Z"), "\(after.text)")
    }

    @Test("PostgreSQL unreachable: reports answer 503 database_unavailable, ingest keeps serving")
    func databaseUnreachable() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try Self.seed(connection)
        // Port 1 on 127.0.0.1: nothing listens, the connect is refused at once.
        let server = try Server(database: database, reportURL: "postgresql://postgres@127.0.0.1:1/detour")
        for _ in 0..<3 {
            let response = try server.get("/api/reports/links", key: "sk_a_2222")
            #expect(response.status == 503)
            #expect(Self.errorCode(response) == "database_unavailable")
            #expect(response.headers["retry-after"] == "5")
        }
        #expect(try server.postEvent() == 200)
        #expect(try HTTP.get(server.base + "/readyz").status == 200)
    }

    @Test("a pooled connection whose backend was terminated is replaced without a failed request")
    func reconnects() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try Self.seed(connection)
        let (reportURL, applicationName) = Self.reportURL(database)
        let server = try Server(database: database, reportURL: reportURL)
        #expect(try server.get("/api/reports/links", key: "sk_a_2222").status == 200)
        let terminated = try connection.query(
            """
            SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
            WHERE application_name = \(applicationName)
            """)
        #expect(try terminated.first?["n", as: Int.self] ?? 0 >= 1)
        for _ in 0..<3 {
            #expect(try server.get("/api/reports/links", key: "sk_a_2222").status == 200)
        }
    }
}

/// A value shared with a helper thread under a lock.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func set(_ newValue: T) { lock.withLock { value = newValue } }
    func get() -> T { lock.withLock { value } }
}
