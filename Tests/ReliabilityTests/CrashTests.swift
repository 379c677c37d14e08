import Foundation
import Postgres
import TestSupport
import Testing

/// Issue 9, "crash under load": SIGKILL the whole pipeline (ingest + aggregator) at random moments
/// while clients post known events, restart it on the same data dir and database, and prove every
/// acknowledged event ends up in PostgreSQL exactly once and nothing appears twice.
@Suite(.serialized)
struct CrashTests {
    @Test("every acknowledged event survives repeated SIGKILLs under load and is loaded exactly once")
    func sigkillUnderLoad() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-chaos-crash")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let app = try AppKeys.create(id: "crash-app", environment: environment)

        let pipeline = RunningPipeline(environment: environment)
        try pipeline.start()
        let load = LoadClient(clients: Scale.clients, app: app) { pipeline.port }
        defer { load.stop() }

        var generator = SystemRandomNumberGenerator()
        var kills = 0
        for _ in 0..<Scale.kills {
            // Let some requests through, then kill at a random moment (bounded waits, no timing asserts).
            // Every life must accept: a restart that answered 503 for good (its log never writable
            // again) passed while the first life's acknowledgements stood (until 2026-12-05).
            #expect(
                load.waitForAcknowledgements(50, timeout: .seconds(60)),
                "life \(kills + 1) acknowledged nothing: \(load.snapshot.statuses); log: \(pipeline.log.suffix(2000))")
            Thread.sleep(forTimeInterval: Double.random(in: 0.05...0.8, using: &generator))
            pipeline.kill()
            kills += 1
            try pipeline.start()
        }
        #expect(
            load.waitForAcknowledgements(50, timeout: .seconds(60)),
            "the last life acknowledged nothing: \(load.snapshot.statuses); log: \(pipeline.log.suffix(2000))")
        load.stop()
        let status = pipeline.stop()
        #expect(status == 0, "the last life stops cleanly on SIGTERM; log: \(pipeline.log.suffix(2000))")

        try Loaded.drain(environment: environment)
        let tally = load.snapshot
        let connection = try database.connect()
        defer { connection.close() }
        let report = try ExactlyOnceReport.check(connection: connection, app: app.id, tally: tally)
        #expect(tally.acknowledged.count > 0, "the load was acknowledged at all: \(tally.statuses)")
        var diagnosis = ""
        if !report.isExactlyOnce {
            let checkpoints =
                (try? connection.query("SELECT row_to_json(c)::text AS row FROM load_checkpoints c").map {
                    try $0["row", as: String.self]
                }) ?? []
            let total =
                (try? connection.query("SELECT count(*) AS n FROM events").first.map { try $0["n", as: Int.self] })
                ?? -1
            let segments =
                (try? Binary.run(["segments", "list", "--data-dir", data.path], environment: environment))?.output ?? ""
            diagnosis =
                "checkpoints \(checkpoints); events rows (all apps) \(total); segments:\n\(segments.suffix(3000))"
        }
        #expect(
            report.isExactlyOnce,
            "\(report); statuses \(tally.statuses); \(diagnosis); log: \(pipeline.log.suffix(6000))")
        #expect(tally.unavailableWithoutRetryAfter == 0)
        #expect(
            tally.statuses.keys.allSatisfy { $0 == 0 || $0 == 200 || $0 == 503 },
            "unexpected statuses \(tally.statuses)")

        let verify = try Binary.run(["segments", "verify", data.path + "/segments"], environment: environment)
        #expect(verify.status == 0, "segments verify after \(kills) kills: \(verify.output) \(verify.errors)")

        Scale.record("crash_kills", kills)
        Scale.record("crash_acknowledged", report.acknowledged)
        Scale.record("crash_lost", report.lost.count)
        Scale.record("crash_duplicated", report.duplicated.count)
    }
}
