import Dispatch
import EventLog
import EventModel
import Foundation
import Locking
import Postgres
import Synchronization
import Testing

@testable import Aggregator

@Suite struct ExactlyOnceTests {
    @Test("replaying the same segments twice loads each event exactly once and keeps the checkpoint")
    func replayTwice() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(200))
        try world.write(manyEvents(100, prefix: "f"), newSegment: true)
        let aggregator = try world.aggregator()
        _ = try aggregator.runUntilCaughtUp()
        let checkpoint = try world.rows(
            "select segment::text, frame_offset::text, loaded_events::text from load_checkpoints")

        let replay = try Replay(configuration: world.configuration())
        let first = try replay.replay(fromSegment: 0)
        let second = try replay.replay(fromSegment: 1)
        #expect(first.records == 300 && second.records == 300)
        #expect(first.rows == 0 && second.rows == 0)
        #expect(try world.count("select count(*) from events") == 300)
        #expect(
            try world.rows("select segment::text, frame_offset::text, loaded_events::text from load_checkpoints")
                == checkpoint)
        aggregator.stop()
    }

    @Test("replay of one node reads only that node's segments from the given one; an unknown node is refused")
    func replayOneNode() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(40, prefix: "a"), node: "node-a")
        try world.write(manyEvents(30, prefix: "b"), node: "node-b")
        try world.write(manyEvents(20, prefix: "c"), node: "node-b", newSegment: true)
        let replay = try Replay(configuration: world.configuration())
        // Segment 2 of node-b only: node-a's log and node-b's first segment are not read (they were
        // read from their start before, whatever --from and --node said).
        let summary = try replay.replay(fromSegment: 2, nodes: ["node-b"])
        #expect(summary.records == 20 && summary.rows == 20)
        #expect(try world.count("select count(*) from events") == 20)
        // A mistyped node name replayed every node; now it is an error naming the node.
        #expect(throws: AggregatorError.self) { try replay.replay(fromSegment: 1, nodes: ["node-x"]) }
        #expect(try world.count("select count(*) from events") == 20)
    }

    @Test("replay into an empty database loads history once, and the aggregator after it adds nothing")
    func replayThenAggregate() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(150))
        let replay = try Replay(configuration: world.configuration())
        #expect(try replay.replay(fromSegment: 0).rows == 150)
        #expect(try replay.replay(fromSegment: 0).rows == 0)
        let aggregator = try world.aggregator()
        let summaries = try aggregator.runUntilCaughtUp()
        #expect(summaries.reduce(0) { $0 + $1.rows } == 0)
        #expect(try world.count("select count(*) from events") == 150)
        aggregator.stop()
    }

    @Test(
        "replay restores a dropped day partition once its orphaned dedup keys are deleted, as docs/aggregator.md says")
    func replayRestoresDroppedPartition() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(30) + [click("drop-c"), match("drop-c")])
        let aggregator = try world.aggregator()
        _ = try aggregator.runUntilCaughtUp()
        aggregator.stop()
        let connection = try world.connect()
        defer { connection.close() }
        try connection.unsafeSQL("drop table events_p20260601, clicks_p20260601, matches_p20260601")
        #expect(try world.count("select count(*) from events") == 20)
        let replay = try Replay(configuration: world.configuration())
        // The dedup keys survive the DROP: the replay takes every row for a duplicate.
        #expect(try replay.replay(fromSegment: 0).rows == 0)
        // docs/aggregator.md, "Replay and rebuild": the statements, verbatim, for the dropped day.
        try connection.unsafeSQL(
            """
            BEGIN;
            DELETE FROM event_ids k WHERE k.event_time >= '2026-06-01' AND k.event_time < '2026-06-02'
              AND NOT EXISTS (SELECT 1 FROM events e WHERE e.app_id = k.app_id AND e.event_id = k.event_id
                              AND e.event_time = k.event_time);
            DELETE FROM click_ids k WHERE k.click_time >= '2026-06-01' AND k.click_time < '2026-06-02'
              AND NOT EXISTS (SELECT 1 FROM clicks c WHERE c.app_id = k.app_id AND c.click_id = k.click_id
                              AND c.click_time = k.click_time);
            DELETE FROM match_ids k WHERE k.match_time >= '2026-06-01' AND k.match_time < '2026-06-02'
              AND NOT EXISTS (SELECT 1 FROM matches m WHERE m.app_id = k.app_id AND m.click_id = k.click_id
                              AND m.match_time = k.match_time);
            COMMIT;
            """)
        #expect(try world.count("select count(*) from event_ids") == 20)
        #expect(try replay.replay(fromSegment: 0).rows == 12)
        #expect(try world.count("select count(*) from events") == 30)
        #expect(try world.count("select count(*) from clicks") == 1 && world.count("select count(*) from matches") == 1)
        #expect(try world.count("select count(*) from events_p20260601") == 10)
        #expect(try replay.replay(fromSegment: 0).rows == 0)
    }

    @Test("two aggregators at once, on two threads and two connections, load everything once")
    func twoAggregators() throws {
        let world = try World()
        defer { world.tearDown() }
        var configuration = world.configuration()
        configuration.maxEventsPerCycle = 120
        let first = try world.aggregator(configuration)
        let second = try world.aggregator(configuration)
        let errors = Locked<[String]>([])
        // Writes continue while both load.
        let envelopes = manyEvents(1200)
        try world.write(Array(envelopes[0..<400]))
        let group = DispatchGroup()
        for aggregator in [first, second] {
            DispatchQueue.global().async(group: group) {
                for _ in 0..<200 {
                    do {
                        _ = try aggregator.runOnce()
                    } catch {
                        errors.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        try world.write(Array(envelopes[400..<800]), node: "node-2")
        try world.write(Array(envelopes[800..<1200]))
        #expect(group.wait(timeout: .now() + 120) == .success)
        // Catch up whatever arrived after the loops ended.
        _ = try first.runUntilCaughtUp()
        #expect(errors.withLock { $0 } == [])
        #expect(try world.count("select count(*) from events") == 1200)
        #expect(try world.count("select count(distinct (app_id, event_id)) from events") == 1200)
        #expect(try world.count("select sum(loaded_events)::int from load_checkpoints") == 1200)
        first.stop()
        second.stop()
    }

    @Test("aggregate --once (runUntilCaughtUp) waits for a load lock held elsewhere, then loads everything")
    func concurrentOnceRunsLoadEverything() throws {
        let world = try World()
        defer { world.tearDown() }
        let aggregator = try world.aggregator()
        defer { aggregator.stop() }
        // Its partitions ahead are made (and known) before the lock is taken, so what waits below is
        // the cycle itself.
        _ = try aggregator.runUntilCaughtUp()
        try world.write(manyEvents(300))
        // Another session holds the load lock, as another --once's partition step or final rollup
        // pass, or report daily's pass, does: none of them loads this backlog. Until 2026-12-05 the
        // run gave up at once ("another aggregator ... is loading", exit 0) and loaded nothing.
        let holder = try world.connect()
        defer { holder.close() }
        try holder.unsafeSQL("BEGIN")
        _ = try holder.query("SELECT pg_advisory_xact_lock(1684370546, hashtext(current_schema()))::text")
        let outcome = Mutex<Result<[CycleSummary], AggregatorError>?>(nil)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let result = Result { () throws(AggregatorError) in try aggregator.runUntilCaughtUp() }
            outcome.withLock { $0 = result }
        }
        #expect(group.wait(timeout: .now() + 1) == .timedOut, "it returned while the lock was held")
        try holder.unsafeSQL("COMMIT")
        #expect(group.wait(timeout: .now() + 60) == .success)
        let summaries = try outcome.withLock { $0 }?.get() ?? []
        #expect(summaries.contains { $0.ran && $0.events == 300 })
        #expect(try world.count("select count(*) from events") == 300)
    }

    @Test("a crash between COPY and COMMIT loses and duplicates nothing")
    func crashAfterCopy() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(300))
        let crashes = Atomic<Int>(2)
        var hooks = LoaderHooks()
        hooks.afterCopy = { _ in
            if crashes.wrappingSubtract(1, ordering: .relaxed).oldValue > 0 {
                throw AggregatorError.injected(step: "after COPY")
            }
        }
        let aggregator = try world.aggregator(hooks: hooks)
        #expect(throws: AggregatorError.self) { try aggregator.runOnce() }
        #expect(try world.count("select count(*) from events") == 0)
        #expect(try world.count("select count(*) from event_ids") == 0)
        #expect(try world.count("select count(*) from load_checkpoints") == 0)
        #expect(aggregator.state == .failing(attempts: 1))
        #expect(throws: AggregatorError.self) { try aggregator.runOnce() }
        _ = try aggregator.runUntilCaughtUp()
        #expect(aggregator.state == .active)
        #expect(try world.count("select count(*) from events") == 300)
        #expect(try world.count("select loaded_events from load_checkpoints") == 300)
        aggregator.stop()
    }

    @Test("PostgreSQL dropping the connection mid-cycle is retried without loss or duplicates")
    func backendTerminated() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(300))
        let killer = try world.connect()
        defer { killer.close() }
        let remaining = Atomic<Int>(1)
        var hooks = LoaderHooks()
        hooks.beforeCommit = { connection in
            guard remaining.wrappingSubtract(1, ordering: .relaxed).oldValue > 0 else { return }
            // Another session terminates the aggregator's backend just before its COMMIT.
            let pid = try connection.query("select pg_backend_pid() as pid").first!["pid", as: Int.self]
            _ = try killer.query("select pg_terminate_backend(\(pid)::int)")
        }
        let aggregator = try world.aggregator(hooks: hooks)
        #expect(throws: AggregatorError.self) { try aggregator.runOnce() }
        #expect(try world.count("select count(*) from events") == 0)
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events") == 300)
        #expect(try world.count("select loaded_events from load_checkpoints") == 300)
        aggregator.stop()
    }

    @Test("an unreachable server fails the cycle and the aggregator recovers when it is back")
    func unreachableThenBack() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(60))
        var wrong = world.configuration()
        wrong.databaseURL = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
        let down = try world.aggregator(wrong)
        #expect(throws: AggregatorError.self) { try down.runOnce() }
        #expect(throws: AggregatorError.self) { try down.runOnce() }
        #expect(down.state == .failing(attempts: 2))
        let failing = world.registry.render()
        #expect(failing.contains("aggregator_state 2.0"))
        #expect(failing.contains("aggregator_failures_total 2"))
        #expect(!failing.contains("aggregator_lag_bytes 0.0"))
        down.stop()
        let up = try world.aggregator()
        _ = try up.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events") == 60)
        #expect(world.registry.render().contains("aggregator_lag_bytes 0.0"))
        up.stop()
    }
}

@Suite struct LogIdentityTests {
    @Test("a replaced data directory is read from its start, not from the old log's checkpoint")
    func replacedLogIsReadFromItsStart() throws {
        let world = try World()
        defer { world.tearDown() }
        for batch in 0..<6 { try world.write(manyEvents(40, prefix: "old\(batch)-")) }
        let aggregator = try world.aggregator()
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events") == 240)
        let oldID = try world.rows("select log_id from load_checkpoints")

        // The data directory is replaced; the database keeps its checkpoint, which lies far
        // beyond the first frames of the new log.
        try world.replaceLog()
        for batch in 0..<3 { try world.write(manyEvents(10, prefix: "new\(batch)-")) }
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events") == 270, "every event of the new log is loaded")
        let newID = try world.rows("select log_id from load_checkpoints")
        #expect(newID != oldID && newID.first?.first != nil, "the checkpoint now names the new log")

        // And the new log's checkpoint then advances as usual, exactly once.
        try world.write(manyEvents(5, prefix: "later-"))
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events") == 275)
        aggregator.stop()
    }

    @Test(
        "a node directory restored from a backup (the same log, ending before the checkpoint) is read from its start: what is written after the restore is loaded"
    )
    func restoredLogIsReadFromItsStart() throws {
        let world = try World()
        defer { world.tearDown() }
        let node = world.dataDirectory + "/segments/node-1"
        let backup = world.dataDirectory + "/backup-node-1"
        for batch in 0..<2 { try world.write(manyEvents(10, prefix: "kept\(batch)-"), newSegment: true) }
        world.closeWriter()
        try FileManager.default.copyItem(atPath: node, toPath: backup)
        for batch in 0..<4 { try world.write(manyEvents(10, prefix: "later\(batch)-"), newSegment: true) }
        let aggregator = try world.aggregator()
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events") == 60)

        // The directory goes back to the backup (same log id, segments 1-2); the database keeps its
        // checkpoint in segment 6. The writer goes on in segments 3, 4, 5: below the checkpoint.
        world.closeWriter()
        try FileManager.default.removeItem(atPath: node)
        try FileManager.default.copyItem(atPath: backup, toPath: node)
        for batch in 0..<3 { try world.write(manyEvents(10, prefix: "restored\(batch)-"), newSegment: true) }
        _ = try aggregator.runUntilCaughtUp()
        #expect(
            try world.count("select count(*) from events") == 90, "events written after the restore were not loaded")
        #expect(try world.rows("select segment from load_checkpoints") == [["5"]], "the checkpoint moved back")

        // From there on, as usual and exactly once.
        try world.write(manyEvents(5, prefix: "after-"))
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events") == 95)
        aggregator.stop()
    }
}
