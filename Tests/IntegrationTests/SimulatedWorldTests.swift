import EventLog
import Foundation
import Postgres
import TestSupport
import Testing

/// The simulator plays a world through the real binary and a real PostgreSQL; what lands in the
/// raw tables must equal the simulator's own truth, exactly, whatever the world threw at ingest
/// (repeated requests, gzip, skewed clocks, late and invalid events).
@Suite(.serialized)
struct SimulatedWorldTests {
    /// A pipeline with one app, fed by `simulate`, drained by the aggregator.
    struct World {
        let database: TestDatabase
        let data: TemporaryDirectory
        let truth: [String: Any]
        let simulateOutput: String
        /// The secret key of app `sim` (reports read with it).
        let secretKey: String

        func connect() throws -> Connection { try database.connect() }
    }

    /// Runs `run`, `apps create` and `simulate` for one seed, then waits until every event is loaded.
    static func play(seed: Int, devices: Int, links: Int, days: Int) throws -> World {
        let database = try TestDatabase.make()
        let data = try TemporaryDirectory()
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let keys = try PipelineProcess.createApp(id: "sim", name: "Simulated", environment: environment)
        let pipeline = try PipelineProcess(
            ["run", "--http-addr", "127.0.0.1:0", "--load-interval", "200ms"], environment: environment)
        defer { pipeline.signal(SIGTERM); _ = pipeline.waitForExit(timeout: .seconds(30)) }
        guard let base = pipeline.waitForLine(startingWith: "listening on ") else {
            throw TestFailure("the pipeline did not start: \(pipeline.standardError)")
        }
        let truthPath = data.path + "/truth.json"
        let simulated = try PipelineProcess.runToEnd(
            [
                "simulate", "--target", base, "--app", "sim", "--publishable-key", keys["publishable_key"] ?? "",
                "--secret-key", keys["secret_key"] ?? "", "--links", String(links), "--devices", String(devices),
                "--days", String(days), "--seed", String(seed), "--truth", truthPath,
            ], environment: environment, timeout: .seconds(300))
        guard simulated.status == 0 else {
            throw TestFailure("simulate failed (\(simulated.status)): \(simulated.output) \(simulated.errors)")
        }
        let truth =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: truthPath))) as? [String: Any]
            ?? [:]
        // Stop the pipeline (ingest drains, the aggregator finishes its cycle), then load what is left.
        pipeline.signal(SIGTERM)
        guard pipeline.waitForExit(timeout: .seconds(30)) == 0 else { throw TestFailure("run did not stop cleanly") }
        let drained = try PipelineProcess.runToEnd(
            ["aggregate", "--once"], environment: environment, timeout: .seconds(120))
        guard drained.status == 0 else { throw TestFailure("aggregate --once failed: \(drained.errors)") }
        // The one line cron users read: what was loaded, the load cycles' and the rollup pass's time.
        let summary =
            #/^aggregate: \d+ cycles, \d+ events, \d+ clicks, \d+ matches loaded in \d+\.\d{3} s, rollups \d+\.\d{3} s$/#
        guard drained.output.split(separator: "\n").contains(where: { $0.wholeMatch(of: summary) != nil }) else {
            throw TestFailure("aggregate --once printed no summary line with its times: \(drained.output)")
        }
        return World(
            database: database, data: data, truth: truth, simulateOutput: simulated.output,
            secretKey: keys["secret_key"] ?? "")
    }

    @Test(
        "raw tables hold exactly the simulated world",
        arguments: [(seed: 7, devices: 150, links: 4, days: 10), (seed: 42, devices: 300, links: 8, days: 21)])
    func rawTablesMatchTruth(seed: Int, devices: Int, links: Int, days: Int) throws {
        let world = try Self.play(seed: seed, devices: devices, links: links, days: days)
        defer { world.database.drop() }
        let totals = try #require(world.truth["totals"] as? [String: Any])
        let connection = try world.connect()
        defer { connection.close() }
        func count(_ sql: SQL) throws -> Int { try connection.query(sql)[0][0, as: Int.self] }

        #expect(
            try count("SELECT count(*) FROM clicks WHERE app_id = 'sim' AND click_kind = 'web'") == totals["clicks"]
                as? Int)
        #expect(
            try count("SELECT count(*) FROM clicks WHERE app_id = 'sim' AND click_kind = 'universal_link'")
                == totals["universal_link_opens"] as? Int)
        #expect(try count("SELECT count(*) FROM matches WHERE app_id = 'sim'") == totals["matched_installs"] as? Int)
        #expect(
            try count("SELECT count(*) FROM events WHERE app_id = 'sim' AND kind = 'event'") == totals["actions"]
                as? Int)
        #expect(
            try count("SELECT count(*) FROM events WHERE app_id = 'sim' AND kind = 'retention'")
                == totals["retention_events"] as? Int)
        #expect(try count("SELECT count(*) FROM devices WHERE app_id = 'sim'") == totals["devices"] as? Int)
        // The simulator checks every answer against what it sent: valid events 2xx, invalid ones refused.
        #expect(world.simulateOutput.contains("unexpected answers: 0"), "\(world.simulateOutput)")
        // Every refused event left a trace in the dead-letter log.
        let deadLetters = try LogReader(directory: world.data.path + "/deadletter", node: "node-1")
            .read(after: nil, maxRecords: 1_000_000, maxBytes: 1 << 30)
        #expect(deadLetters.count >= totals["rejected_events"] as? Int ?? .max)

        // Each device's install time (its first event, clock skew corrected) equals the truth's.
        let truthDevices = try #require(world.truth["devices"] as? [[String: Any]])
        var installs: [String: String] = [:]
        for row in try connection.query(
            "SELECT device_id, to_char(first_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS first FROM devices WHERE app_id = 'sim'"
        ) {
            installs[try row["device_id", as: String.self]] = try row["first", as: String.self]
        }
        // Exact, except devices with skewed clocks: the pipeline corrects them from `sent_at`, which
        // leaves the transmission delay (milliseconds) in their install time (docs/simulator.md).
        let inexact = truthDevices.filter { installs[$0["device_id"] as? String ?? ""] != $0["install"] as? String }
        let far = inexact.filter { device in
            guard let loaded = installs[device["device_id"] as? String ?? ""].flatMap(Self.milliseconds),
                let expected = (device["install"] as? String).flatMap(Self.milliseconds)
            else { return true }
            return abs(loaded - expected) > 5_000
        }
        #expect(far.isEmpty, "install times differ by more than 5 s for \(far.count) devices, e.g. \(far.prefix(3))")
        #expect(
            inexact.count * 10 <= truthDevices.count, "only the few skewed devices may differ at all: \(inexact.count)")
    }
}

extension SimulatedWorldTests {
    /// Milliseconds since the epoch of `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    static func milliseconds(_ text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}

/// A failure while setting up a scenario, with what the processes printed.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
