import Foundation
import TestSupport
import Testing

@testable import Aggregator

@Suite struct KilledProcessTests {
    /// `detour-analytics aggregate` in a child process, killed with SIGKILL at random moments while
    /// it works a backlog off in small cycles (many a kill lands between COPY and COMMIT), then
    /// `aggregate --once`: every event is loaded exactly once.
    @Test("an aggregator process killed with SIGKILL mid-load, again and again, loses and duplicates nothing")
    func killedMidLoad() throws {
        guard FileManager.default.isExecutableFile(atPath: PipelineProcess.binaryPath) else {
            Issue.record("build the binary first: \(PipelineProcess.binaryPath)")
            return
        }
        let world = try World()
        defer { world.tearDown() }
        let envelopes = manyEvents(3000)
        for start in stride(from: 0, to: 3000, by: 100) {
            try world.write(Array(envelopes[start..<start + 100]))
        }
        // Named, so the test can tell when a killed child's PostgreSQL session has ended: a COMMIT it
        // sent just before the kill still completes in its backend, after the child is gone.
        let name = "killed-" + world.database.schema
        let arguments = [
            "aggregate", "--database-url", world.database.url + "&application_name=\(name)", "--data-dir",
            world.dataDirectory, "--max-cycle-events", "150", "--load-interval", "10ms",
        ]
        func waitForChildSessionsToEnd() throws {
            let ended = try eventually(timeout: .seconds(60)) {
                try world.count("select count(*)::int from pg_stat_activity where application_name = \(name)") == 0
            }
            try #require(ended, "a killed child's PostgreSQL session did not end")
        }
        var generator = SystemRandomNumberGenerator()
        var loaded = 0
        for _ in 0..<5 {
            let child = try PipelineProcess(arguments)
            // Wait (bounded) until this process has committed something, then kill it a moment later,
            // in the middle of one of its next cycles.
            let committed = try eventually(timeout: .seconds(60)) {
                try !child.isRunning || world.count("select count(*) from events") > loaded
            }
            Thread.sleep(forTimeInterval: Double.random(in: 0...0.15, using: &generator))
            // Killed, not exited: an aggregate that died at start-up (or ended on its own) would leave
            // the final --once to load everything, and the test would pass without a kill mid-load.
            try #require(committed && child.isRunning, "the aggregator ended or loaded nothing: \(child.standardError)")
            child.signal(SIGKILL)
            #expect(child.waitForExit(timeout: .seconds(10)) == SIGKILL)
            try waitForChildSessionsToEnd()
            loaded = try world.count("select count(*) from events")
        }
        let loadedBeforeFinish = try world.count("select count(*) from events")
        print("killed-process test: \(loadedBeforeFinish) of 3000 events loaded before the final run")
        let finish = try PipelineProcess.runToEnd(Array(arguments.dropLast(2)) + ["--once"], timeout: .seconds(120))
        #expect(finish.status == 0, "\(finish.errors)")
        #expect(loadedBeforeFinish > 0 && loadedBeforeFinish <= 3000)
        // What cron users read: the summary with what this run loaded, and (when it loaded something)
        // where the load's time went.
        let lines = finish.output.split(separator: "\n")
        #expect(
            lines.contains { $0.hasPrefix("aggregate: ") && $0.contains(" \(3000 - loadedBeforeFinish) events, ") },
            "\(finish.output)")
        if loadedBeforeFinish < 3000 {
            let phases = lines.first { $0.hasPrefix("aggregate: load phases ") }
            #expect(
                phases?.contains(#/read\+copy=\d+\.\d{3}s/#) == true
                    && phases?.contains(#/commit=\d+\.\d{3}s/#) == true, "\(finish.output)")
        }
        #expect(try world.count("select count(*) from events") == 3000)
        #expect(try world.count("select count(distinct event_id) from events") == 3000)
        #expect(try world.count("select loaded_events from load_checkpoints") == 3000)
    }
}
