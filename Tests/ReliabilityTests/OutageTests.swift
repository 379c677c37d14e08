import Foundation
import Postgres
import TestSupport
import Testing

/// Issue 9, "PostgreSQL outage": under load, stop PostgreSQL (a cluster of the test's own, never the
/// shared one), keep it down, start it again; ingest answers 2xx throughout and afterwards every
/// acknowledged event is loaded exactly once.
@Suite(.serialized)
struct OutageTests {
    @Test("ingest keeps acknowledging while PostgreSQL is down, and everything is loaded once after it returns")
    func postgresOutageUnderLoad() throws {
        let cluster = try LocalCluster()
        defer { cluster.destroy() }
        let data = try TemporaryDirectory(prefix: "detour-chaos-outage")
        let environment = ["DATABASE_URL": cluster.url, "DETOUR_DATA_DIR": data.path]
        let migrated = try Binary.run(
            ["migrate", "--sql-dir", RepositoryRoot.path + "/sql"], environment: environment, timeout: .seconds(120))
        try #require(migrated.status == 0, "migrate: \(migrated.errors)")
        let app = try AppKeys.create(id: "outage-app", environment: environment)

        let pipeline = RunningPipeline(environment: environment)
        try pipeline.start()
        defer { pipeline.stop() }
        let load = LoadClient(clients: Scale.clients, app: app, prefix: "out") { pipeline.port }
        defer { load.stop() }
        #expect(load.waitForAcknowledgements(100), "load before the outage")

        try cluster.stop()
        let before = load.snapshot.statuses
        let outage = Scale.outageSeconds
        let acknowledgedAtStop = load.acknowledgedCount
        Thread.sleep(forTimeInterval: Double(outage))
        let during = load.snapshot.statuses
        let acknowledgedDuringOutage = load.acknowledgedCount - acknowledgedAtStop
        try cluster.restart()

        // Ingest answered everything with 200 while PostgreSQL was down.
        let nonOK = during.filter { $0.key != 200 }.map { ($0.key, $0.value - (before[$0.key] ?? 0)) }.filter {
            $0.1 > 0
        }
        #expect(nonOK.isEmpty, "answers other than 200 during the outage: \(nonOK)")
        #expect(acknowledgedDuringOutage > 0, "events were acknowledged during the outage")

        #expect(load.waitForAcknowledgements(100), "load after the outage")
        load.stop()
        #expect(pipeline.stop() == 0, "clean stop after the outage; log: \(pipeline.log.suffix(2000))")

        try Loaded.drain(environment: environment)
        let tally = load.snapshot
        let connection = try Connection(url: cluster.url)
        defer { connection.close() }
        let report = try ExactlyOnceReport.check(connection: connection, app: app.id, tally: tally)
        #expect(report.isExactlyOnce, "\(report); statuses \(tally.statuses)")
        #expect(tally.statuses.keys.allSatisfy { $0 == 200 }, "every request answered 200: \(tally.statuses)")

        Scale.record("outage_seconds", outage)
        Scale.record("outage_acknowledged_during", acknowledgedDuringOutage)
        Scale.record("outage_acknowledged", report.acknowledged)
        Scale.record("outage_lost", report.lost.count)
        Scale.record("outage_duplicated", report.duplicated.count)
    }
}
