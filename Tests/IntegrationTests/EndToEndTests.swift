import Foundation
import Postgres
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The walking skeleton, exercised the way the README says: the real binary, a real PostgreSQL,
/// a real HTTP request with a wire-format body, and the row in `events`.
@Suite(.serialized)
struct EndToEndTests {
    @Test("an SDK event posted over HTTP lands in the events table (bounded wait)")
    func sdkEventReachesPostgres() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory()
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]

        let keys = try PipelineProcess.createApp(id: "e2e-app", name: "End to end", environment: environment)
        let publishable = try #require(keys["publishable_key"])
        #expect(keys["app_id"] == "e2e-app")
        #expect(keys["secret_key"]?.hasPrefix("sk_") == true)

        let pipeline = try PipelineProcess(
            ["run", "--http-addr", "127.0.0.1:0", "--load-interval", "200ms"], environment: environment)
        defer { pipeline.signal(SIGTERM); _ = pipeline.waitForExit(timeout: .seconds(20)) }
        let base = try #require(
            pipeline.waitForLine(startingWith: "listening on "), "no listening line; log: \(pipeline.standardError)")

        let body =
            #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"USD"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3F2B8C1E-9A4D-4E2B-8F1A-2C3D4E5F6A7B"}"#
        let status = try HTTP.postJSON(
            base + "/api/analytics/event", body: body,
            headers: ["Authorization": "Bearer \(publishable)", "X-App-ID": "e2e-app", "X-SDK": "ios/1.0.2"])
        #expect(status == 200)
        let retention =
            #"{"event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
        #expect(
            try HTTP.postJSON(
                base + "/api/analytics/retention", body: retention,
                headers: ["Authorization": "Bearer \(publishable)", "X-App-ID": "e2e-app"]) == 200)

        let connection = try database.connect()
        defer { connection.close() }
        var rows: [(String, String, String)] = []
        // Bounded generously: a fresh process's first cycle (partitions, COPY) on a loaded machine.
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            rows = try connection.query(
                "SELECT kind, name, device_id FROM events WHERE app_id = 'e2e-app' ORDER BY kind"
            ).map {
                (try $0["kind", as: String.self], try $0["name", as: String.self], try $0["device_id", as: String.self])
            }
            if rows.count == 2 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(rows.count == 2, "events never reached PostgreSQL; log: \(pipeline.standardError)")
        #expect(rows.first?.0 == "event" && rows.first?.1 == "purchase")
        #expect(rows.last?.0 == "retention" && rows.last?.1 == "app_open")
        #expect(
            rows.allSatisfy { $0.2 == "3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b" }, "device ids are normalised to lowercase"
        )

        pipeline.signal(SIGTERM)
        #expect(pipeline.waitForExit(timeout: .seconds(20)) == 0, "SIGTERM stops the pipeline cleanly")
    }
}
