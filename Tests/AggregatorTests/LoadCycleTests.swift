import EventLog
import EventModel
import Foundation
import Postgres
import TestSupport
import Testing

@testable import Aggregator

@Suite struct LoadCycleTests {
    @Test("a cycle loads events, clicks and matches with devices, links, rollups and checkpoints")
    func loadsEverything() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write([
            click("clk_1"), match("clk_1"),
            event(
                "e1", name: "app_open", device: "dev-1", time: "2026-06-01T10:00:00.000Z", installClick: "clk_1",
                kind: .retention),
            event(
                "e2", name: "purchase", device: "dev-1", time: "2026-06-01T11:00:00.000Z",
                data: #"{"revenue":29.99,"note":"tab\there \\ back"}"#),
            event("e3", name: "purchase", device: "dev-2", time: "2026-06-02T11:00:00.000Z"),
        ])
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.ran)
        #expect(summary.records == 5)
        #expect(summary.events == 3 && summary.clicks == 1 && summary.matches == 1)
        #expect(!summary.backlog)

        #expect(try world.count("select count(*) from events") == 3)
        #expect(try world.count("select count(*) from event_ids") == 3)
        #expect(try world.count("select count(*) from clicks where utm_source = 'news' and path = '/articles/2'") == 1)
        #expect(try world.count("select count(*) from matches where score = 900") == 1)
        #expect(try world.rows("select data->>'note' from events where event_id = 'e2'") == [["tab\there \\ back"]])
        #expect(
            try world.rows("select device_id, first_seen::text, install_click_id from devices order by 1")
                == [["dev-1", "2026-06-01 10:00:00+00", "clk_1"], ["dev-2", "2026-06-02 11:00:00+00", nil]])
        #expect(try world.rows("select path from links") == [["/articles/2"]])
        #expect(
            try world.rows(
                "select day::text, kind, name, events::text, devices::text from rollup_events_daily order by 1, 2, 3")
                == [
                    ["2026-06-01", "event", "purchase", "1", "1"], ["2026-06-01", "retention", "app_open", "1", "1"],
                    ["2026-06-02", "event", "purchase", "1", "1"],
                ])
        #expect(try world.count("select loaded_events from load_checkpoints where node = 'node-1'") == 5)
        // Rows sit in their own day partitions, not the default one.
        #expect(try world.count("select count(*) from events_default") == 0)
        #expect(
            try world.rows("select distinct tableoid::regclass::text from events order by 1")
                == [["events_p20260601"], ["events_p20260602"]])

        // Nothing new: the next cycle reads nothing and changes nothing.
        let idle = try aggregator.runOnce()
        #expect(idle.records == 0 && idle.rows == 0)
        aggregator.stop()
    }

    @Test(
        "an app whose time zone the server no longer knows stops neither the loads (078) nor other apps' rollups (079)"
    )
    func unknownTimeZoneHoldsOnlyItsApp() throws {
        let world = try World()
        defer { world.tearDown() }
        let connection = try world.connect()
        defer { connection.close() }
        try Self.addAppInGoneZone(connection)
        // Each app: a click, an install through it, and actions over three days (17 devices).
        try world.write(
            [
                click("ca"), event("ia", device: "dev-a", installClick: "ca"), click("cb", app: "app_b"),
                event("ib", app: "app_b", device: "dev-b", installClick: "cb"),
            ] + manyEvents(10, prefix: "a") + manyEvents(10, prefix: "b", app: "app_b"))
        let aggregator = try world.aggregator()
        defer { aggregator.stop() }
        let summaries = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events where app_id = 'app_1'") == 11)
        #expect(try world.count("select count(*) from events where app_id = 'app_b'") == 11)
        // app_1 is rolled up; app_b's keys (its days in UTC, 078, and the days either side, 080:
        // 05-31 to 06-04), devices and click stay queued.
        #expect(summaries.last?.heldRollups == [HeldRollups(app: "app_b", timeZone: "Gone/Zone", days: 5)])
        #expect(world.registry.render().contains("aggregator_rollup_held_apps 1.0"))
        #expect(try world.count("select count(*) from rollup_pending_keys where app_id = 'app_1'") == 0)
        #expect(try world.count("select count(*) from rollup_devices where app_id = 'app_1'") == 11)
        #expect(try world.count("select count(*) from rollup_clicks where app_id = 'app_1'") == 1)
        func queued() throws -> [Int] {
            try [
                "select count(*) from rollup_pending_keys where app_id = 'app_b'",
                "select count(*) from rollup_pending_devices where app_id = 'app_b'",
                "select count(*) from rollup_pending_clicks where app_id = 'app_b'",
                "select count(*) from rollup_devices where app_id = 'app_b'",
            ].map { try world.count($0) }
        }
        #expect(try queued() == [5, 11, 1, 0])
        // Held again by the next pass, nothing lost or doubled.
        #expect(try aggregator.processRollups() == 0)
        #expect(try queued() == [5, 11, 1, 0])

        try connection.execute("UPDATE apps SET time_zone = 'UTC' WHERE id = 'app_b'")
        #expect(try aggregator.processRollups() == 5)
        #expect(world.registry.render().contains("aggregator_rollup_held_apps 0.0"))
        #expect(try queued() == [0, 0, 0, 11])
        #expect(try world.count("select count(*) from rollup_clicks where app_id = 'app_b'") == 1)
        // What the held work rolled up to is what a rebuild computes from the raw rows.
        try expectRebuildMatches(connection)
    }

    /// Adds app `app_b` in `Gone/Zone`: as a name the server knew when the app was made and no
    /// longer does (apps_time_zone_known refuses it on insert, so it is dropped here to make such a row).
    static func addAppInGoneZone(_ connection: Connection) throws {
        try connection.execute("ALTER TABLE apps DROP CONSTRAINT apps_time_zone_known")
        try connection.execute("INSERT INTO apps (id, name, time_zone) VALUES ('app_b', 'B', 'Gone/Zone')")
    }

    @Test("a running aggregator applies held rollup work within a rollup interval of the zone being known again, idle")
    func heldWorkAppliedWhenIdle() throws {
        let world = try World()
        defer { world.tearDown() }
        let connection = try world.connect()
        defer { connection.close() }
        try Self.addAppInGoneZone(connection)
        try world.write([click("cb", app: "app_b"), event("ib", app: "app_b", device: "dev-b", installClick: "cb")])
        var configuration = world.configuration()
        configuration.rollupInterval = .milliseconds(200)
        let aggregator = try world.aggregator(configuration)
        defer { aggregator.stop() }
        aggregator.start()
        func held() throws -> Int { try world.count("select count(*) from rollup_pending_keys where app_id = 'app_b'") }
        let wasHeld = try eventually {
            try world.count("select count(*) from events where app_id = 'app_b'") == 1
                && world.registry.render().contains("aggregator_rollup_held_apps 1.0")
        }
        try #require(wasHeld, "app_b's work was never held")
        #expect(try held() > 0)
        // Nothing new arrives: only idle cycles run. Until 2026-12-05 the pass that held the work
        // ended the passes, and it stayed queued until the next event of any app.
        try connection.execute("UPDATE apps SET time_zone = 'UTC' WHERE id = 'app_b'")
        #expect(try eventually { try held() == 0 }, "the held work was never applied")
        #expect(try world.count("select count(*) from rollup_clicks where app_id = 'app_b'") == 1)
    }

    /// Released into `zone` with the held events at `time`: in the UTC day before their local day
    /// (Pago Pago, UTC-11: 06-04 18:00 local) or after it (Tokyo, UTC+9: 06-06 05:00 local), and in
    /// UTC. The device was rolled up before the hold, so only the queued days (080: the UTC day
    /// and the days either side) bring its later events into their local day.
    @Test(
        "events of known devices loaded while the app's zone is unknown roll up into their local days once it is known again",
        arguments: [
            ("Pacific/Pago_Pago", "2026-06-05T05:00:00.000Z"), ("Asia/Tokyo", "2026-06-05T20:00:00.000Z"),
            ("UTC", "2026-06-05T12:00:00.000Z"),
        ])
    func heldDaysCoverLocalDays(_ zone: String, _ time: String) throws {
        let world = try World()
        defer { world.tearDown() }
        let connection = try world.connect()
        defer { connection.close() }
        try connection.execute("INSERT INTO apps (id, name, time_zone) VALUES ('app_b', 'B', \(zone))")
        try world.write(
            [click("cb", app: "app_b"), event("ib", app: "app_b", device: "dev-b", installClick: "cb")]
                + manyEvents(10, prefix: "before", app: "app_b"))
        let aggregator = try world.aggregator()
        defer { aggregator.stop() }
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from rollup_pending_keys where app_id = 'app_b'") == 0)

        // The zone leaves the server's tzdata; the same devices' later events arrive meanwhile.
        try connection.execute("ALTER TABLE apps DROP CONSTRAINT apps_time_zone_known")
        try connection.execute("UPDATE apps SET time_zone = 'Gone/Zone' WHERE id = 'app_b'")
        // dev-b came through the link: its purchase (with revenue) counts for the link on its local day.
        try world.write([
            event("held-1", app: "app_b", device: "dev-b", time: time, data: #"{"revenue":5,"currency":"USD"}"#),
            event("held-2", app: "app_b", name: "sign_up", device: "dev-b", time: time),
        ])
        let held = try aggregator.runUntilCaughtUp()
        #expect(held.last?.heldRollups.first?.app == "app_b")
        #expect(try world.count("select count(*) from events where app_id = 'app_b'") == 13)

        // Known again (installed again, or `apps update --no-rebuild`): the next pass applies it all.
        try connection.execute("UPDATE apps SET time_zone = \(zone) WHERE id = 'app_b'")
        _ = try aggregator.processRollups()
        #expect(try world.count("select count(*) from rollup_pending_keys where app_id = 'app_b'") == 0)
        try expectRebuildMatches(connection)
    }

    /// What the rollups hold is what a rebuild computes from the raw rows.
    private func expectRebuildMatches(
        _ connection: Connection, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let relations = [
            "rollup_devices", "rollup_clicks", "rollup_link_daily", "rollup_installs_daily", "rollup_funnel_daily",
            "rollup_attribution_summary", "rollup_link_summary", "rollup_cohort_events_daily",
            "rollup_link_events_daily", "rollup_events_daily",
        ]
        func snapshot() throws -> [String] {
            try relations.map { relation in
                try connection.query(
                    "SELECT count(*)::text || ' ' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '-') AS s FROM \(identifier: relation) t"
                )[0]["s", as: String.self]
            }
        }
        let incremental = try snapshot()
        #expect(
            incremental.allSatisfy { !$0.hasPrefix("0 ") },
            "\(zip(relations, incremental).map { "\($0) \($1)" })", sourceLocation: sourceLocation)
        struct Rollback: Error {}
        do {
            try connection.withTransaction { connection in
                try connection.execute("SELECT rebuild_rollups()")
                let rebuilt = try snapshot()
                #expect(
                    rebuilt == incremental,
                    "\(zip(relations, zip(incremental, rebuilt)).filter { $1.0 != $1.1 }.map { "\($0): \($1.0) rebuilt \($1.1)" })",
                    sourceLocation: sourceLocation)
                throw Rollback()
            }
        } catch is Rollback {}
    }

    @Test("a node whose log cannot be read stops there alone: the other nodes load, and it resumes once readable")
    func unreadableNodeStopsAlone() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(5, prefix: "one"), node: "node-1")
        try world.write(manyEvents(5, prefix: "one-later"), node: "node-1", newSegment: true)
        try world.write(manyEvents(5, prefix: "two"), node: "node-2")
        // node-1's first segment cannot be read (as a bad sector's EIO: here a directory in its
        // place, which opens and then fails to read with EISDIR, even for root).
        let segment = world.dataDirectory + "/segments/node-1/00000000000000000001.seg"
        let saved = try Data(contentsOf: URL(fileURLWithPath: segment))
        try FileManager.default.removeItem(atPath: segment)
        try FileManager.default.createDirectory(atPath: segment, withIntermediateDirectories: false)
        let aggregator = try world.aggregator()
        defer { aggregator.stop() }
        let first = try aggregator.runOnce()
        #expect(first.unreadableNodes.keys.sorted() == ["node-1"], "\(first.unreadableNodes)")
        #expect(try world.count("select count(*) from events where event_id like 'two-%'") == 5)
        #expect(try world.count("select count(*) from events where event_id like 'one%'") == 0)
        #expect(world.registry.render().contains("aggregator_unreadable_nodes 1.0"))
        // Not a day is complete while it holds node-1 back (no caught_up_at for anyone).
        #expect(try world.count("select count(*) from load_checkpoints where caught_up_at is not null") == 0)

        try FileManager.default.removeItem(atPath: segment)
        try saved.write(to: URL(fileURLWithPath: segment))
        let summaries = try aggregator.runUntilCaughtUp()
        #expect(summaries.allSatisfy { $0.unreadableNodes.isEmpty })
        #expect(try world.count("select count(*) from events where event_id like 'one%'") == 10)
        #expect(world.registry.render().contains("aggregator_unreadable_nodes 0.0"))
    }

    @Test("a segments directory that cannot be reached fails the cycle with the system's reason, not an empty log")
    func unreachableLogFailsTheCycle() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(5))
        // As a data directory made unreadable (EACCES, which root does not get): a path that
        // cannot be resolved (ELOOP). Until 2026-12-05 either read as "no log here": the cycle
        // loaded nothing, logged nothing, and `aggregate --once` exited 0 saying "no event log".
        let segments = world.dataDirectory + "/segments"
        try FileManager.default.moveItem(atPath: segments, toPath: segments + ".away")
        try FileManager.default.createSymbolicLink(atPath: segments, withDestinationPath: segments)
        let aggregator = try world.aggregator()
        defer { aggregator.stop() }
        do {
            _ = try aggregator.runOnce()
            Issue.record("a cycle succeeded without reaching the log")
        } catch {
            #expect("\(error)".contains("cannot read \(segments): Too many levels of symbolic links"), "\(error)")
        }
        #expect(try world.count("select count(*) from load_checkpoints where caught_up_at is not null") == 0)
        try FileManager.default.removeItem(atPath: segments)
        try FileManager.default.moveItem(atPath: segments + ".away", toPath: segments)
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events") == 5)
    }

    @Test("duplicate event ids within a cycle, across segments and across nodes are loaded once")
    func duplicatesLoadedOnce() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write([event("dup"), event("dup"), event("x1")])
        try world.write([event("dup"), event("x1"), event("x2")], newSegment: true)
        try world.write([event("dup"), event("x2"), event("x3")], node: "node-2")
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.records == 9)
        #expect(summary.events == 4)
        #expect(try world.count("select count(*) from events") == 4)
        #expect(try world.count("select count(distinct event_id) from events") == 4)
        #expect(try world.count("select count(*) from load_checkpoints") == 2)
        aggregator.stop()
    }

    @Test("rows loaded by an earlier cycle and sent again are loaded once, beside the new rows of the same cycle")
    func duplicatesOfEarlierCycles() throws {
        let world = try World()
        defer { world.tearDown() }
        let aggregator = try world.aggregator()
        defer { aggregator.stop() }
        try world.write([event("a1", time: "2026-06-01T12:00:00.000Z"), click("c1"), match("c1")])
        let first = try aggregator.runOnce()
        #expect([first.events, first.clicks, first.matches] == [Int](repeating: 1, count: 3))

        // A retried request (a1, c1's click and match again) beside new rows: the optimistic load
        // meets the keys loaded before, rolls back to its savepoint and deduplicates first.
        try world.write([
            event("a1", time: "2026-06-01T12:00:00.000Z"),
            event("a2", time: "2026-06-01T08:00:00.000Z", installClick: "c1"),
            click("c1"), click("c2", path: "/articles/9"), match("c1"), match("c2"),
        ])
        let second = try aggregator.runOnce()
        #expect(second.records == 6)
        #expect([second.events, second.clicks, second.matches] == [Int](repeating: 1, count: 3))
        #expect(try world.count("select count(*) from events") == 2)
        #expect(try world.count("select count(*) from clicks") == 2)
        #expect(try world.count("select count(*) from matches") == 2)
        #expect(try world.count("select count(*) from event_ids") == 2)
        #expect(try world.count("select count(*) from links") == 2)
        #expect(
            try world.rows("select first_seen::text, install_click_id from devices where device_id = 'dev-1'")
                == [["2026-06-01 08:00:00+00", "c1"]])

        // Later cycles without duplicates (first deduplicating, then optimistic again).
        for id in ["a3", "a4"] {
            try world.write([event(id, device: "dev-2")])
            #expect(try aggregator.runOnce().events == 1)
        }
        #expect(try world.count("select count(*) from events") == 4)
        #expect(try world.count("select sum(loaded_events)::int from load_checkpoints") == 11)
    }

    @Test("a batch bound works a large backlog off in several cycles, each event once")
    func boundedBatches() throws {
        let world = try World()
        defer { world.tearDown() }
        let envelopes = manyEvents(900)
        for start in stride(from: 0, to: 900, by: 100) {
            try world.write(Array(envelopes[start..<start + 100]))
        }
        var configuration = world.configuration()
        configuration.maxEventsPerCycle = 250
        let aggregator = try world.aggregator(configuration)
        let summaries = try aggregator.runUntilCaughtUp(maxCycles: 50)
        #expect(summaries.count >= 4)
        #expect(summaries.allSatisfy { $0.records <= 250 })
        #expect(summaries.last?.backlog == false)
        #expect(try world.count("select count(*) from events") == 900)
        aggregator.stop()
    }

    @Test("a cycle that reads a node's log to its end records when it began; one that leaves a backlog does not")
    func caughtUpAt() throws {
        let world = try World()
        defer { world.tearDown() }
        let envelopes = manyEvents(300)
        for start in stride(from: 0, to: 300, by: 100) {
            try world.write(Array(envelopes[start..<start + 100]))
        }
        var configuration = world.configuration()
        configuration.maxEventsPerCycle = 100
        let aggregator = try world.aggregator(configuration)
        defer { aggregator.stop() }
        let caughtUp: SQL = "select caught_up_at::text, newest_received_at::text from load_checkpoints"
        func caughtUpSince(_ time: Timestamp) throws -> Int {
            try world.count("select count(*) from load_checkpoints where caught_up_at >= \(time.iso8601)::timestamptz")
        }
        #expect(try aggregator.runOnce().backlog == true)
        #expect(try world.rows(caughtUp).first?.first == .some(nil))  // more is waiting: not at the end

        let beforeLast = Timestamp.now()
        let summaries = try aggregator.runUntilCaughtUp(maxCycles: 10)
        #expect(summaries.last?.backlog == false)
        let afterLoad = try world.rows(caughtUp)
        #expect(try caughtUpSince(beforeLast) == 1)

        // An idle cycle (nothing new) moves it on; the newest loaded received_at stays.
        let beforeIdle = Timestamp.now()
        #expect(try aggregator.runOnce().records == 0)
        #expect(try caughtUpSince(beforeIdle) == 1)
        #expect(try world.rows(caughtUp).first?.last == afterLoad.first?.last)
    }

    @Test("a received_at ahead of the database's clock is stored as its now: it cannot mark later days loaded")
    func checkpointTimesNotAheadOfNow() throws {
        let world = try World()
        defer { world.tearDown() }
        // An ingest host whose clock stepped two days forward for a while.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let ahead = formatter.string(from: Date().addingTimeInterval(2 * 86_400))
        try world.write([event("ahead", time: ahead)])
        let aggregator = try world.aggregator()
        defer { aggregator.stop() }
        #expect(try aggregator.runOnce().events == 1)
        #expect(try world.count("select count(*) from events where received_at > now() + interval '1 day'") == 1)
        #expect(
            try world.count(
                "select count(*) from load_checkpoints where newest_received_at <= now() and caught_up_at <= now()")
                == 1)
        #expect(try world.count("select count(*) from report_watermark where loaded_through <= now()") == 1)
    }

    @Test("caught_up_at is recorded only when every node was read to its end: a node left unread holds it back")
    func caughtUpNeedsEveryNode() throws {
        let world = try World()
        defer { world.tearDown() }
        // One frame of 100 on each node, and a cycle bound of 100: node-1's frame uses it all up.
        try world.write(manyEvents(100, prefix: "one"), node: "node-1")
        try world.write(manyEvents(100, prefix: "two"), node: "node-2")
        var configuration = world.configuration()
        configuration.maxEventsPerCycle = 100
        let aggregator = try world.aggregator(configuration)
        defer { aggregator.stop() }
        let first = try aggregator.runOnce()
        #expect(first.records == 100)
        // node-2 was not read: more is waiting, and nothing may claim every log is loaded.
        #expect(first.backlog, "node-2's unread frame is backlog")
        #expect(try world.count("select count(*) from load_checkpoints where caught_up_at is not null") == 0)
        let rest = try aggregator.runUntilCaughtUp(maxCycles: 10)
        #expect(rest.last?.backlog == false)
        #expect(try world.count("select count(*) from events") == 200)
        #expect(try world.count("select count(*) from load_checkpoints where caught_up_at is not null") == 2)
    }

    @Test("a cycle reads a node's share in pieces: every record once, the bound kept, the position at the end")
    func readInPieces() throws {
        let world = try World()
        defer { world.tearDown() }
        // 10,000 records in frames of 100: more than one piece (NodeReadPieces.pieceRecords) per cycle.
        let envelopes = manyEvents(10_000)
        for start in stride(from: 0, to: 10_000, by: 100) {
            try world.write(Array(envelopes[start..<start + 100]))
        }
        var configuration = world.configuration()
        configuration.maxEventsPerCycle = 7_000
        let aggregator = try world.aggregator(configuration)
        let first = try aggregator.runOnce()
        // Past the first piece, within the bound (group commits may join appends into larger
        // frames, so "at most one frame short" is not pinned here), and more is waiting.
        #expect(first.records > NodeReadPieces.pieceRecords && first.records <= 7_000)
        #expect(first.backlog)
        let summaries = try aggregator.runUntilCaughtUp(maxCycles: 10)
        #expect(summaries.last?.backlog == false)
        #expect(first.records + summaries.reduce(0) { $0 + $1.records } == 10_000)
        #expect(try world.count("select count(*) from events") == 10_000)
        #expect(try world.count("select count(distinct event_id) from events") == 10_000)
        #expect(try world.count("select sum(loaded_events)::int from load_checkpoints") == 10_000)
        aggregator.stop()
    }

    @Test("an undecodable record is skipped and counted, and loading goes on")
    func undecodableSkipped() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write([event("ok-1")])
        var configuration = LogConfiguration(directory: world.dataDirectory + "/segments", node: "node-9")
        configuration.durability = .interval(.milliseconds(100))
        let writer = try LogWriter(configuration: configuration)
        try writer.append([Array(#"{"v":1,"garbage":true}"#.utf8), event("ok-2").encoded()])
        writer.close()
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.undecodable == 1)
        #expect(try world.count("select count(*) from events") == 2)
        aggregator.stop()
    }
}

@Suite struct RetentionTests {
    @Test("after a successful cycle, loaded sealed segments older than the age are deleted, the rest kept")
    func deletesLoadedSegments() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(manyEvents(30, prefix: "a"))
        try world.write(manyEvents(30, prefix: "b"), newSegment: true)
        try world.write(manyEvents(30, prefix: "c"), newSegment: true)
        let nodeDirectory = world.dataDirectory + "/segments/node-1"
        let before = try FileManager.default.contentsOfDirectory(atPath: nodeDirectory).filter { $0.hasSuffix(".seg") }
        #expect(before.count >= 3)
        var configuration = world.configuration()
        configuration.retainLoadedSegmentsFor = .zero
        configuration.retentionCheckInterval = .zero
        let directory = configuration.segmentsDirectory
        let aggregator = try Aggregator(
            configuration: configuration, registry: world.registry,
            retention: { node, through, age in
                try LogRetention.deleteLoaded(directory: directory, node: node, loadedThrough: through, olderThan: age)
            })
        _ = try aggregator.runUntilCaughtUp()
        let after = try FileManager.default.contentsOfDirectory(atPath: nodeDirectory).filter { $0.hasSuffix(".seg") }
        #expect(after.count == 1)
        #expect(after.first == before.sorted().last)
        #expect(try world.count("select count(*) from events") == 90)
        // A replay of what retention deleted simply finds less; the database keeps every row.
        #expect(try Replay(configuration: configuration).replay(fromSegment: 0).rows == 0)
        aggregator.stop()
    }
}

@Suite struct PoisonTests {
    @Test("a payload jsonb refuses and a NUL in a name do not block loading; nothing is lost")
    func poisonPayloads() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write([
            event("good-1"),
            event("huge-number", data: #"{"big":1e999999}"#),  // valid JSON, beyond jsonb's numeric
            event("nul-name", name: "bad\u{0}name"),
            event("surrogate", data: #"{"a":"\ud800"}"#),  // jsonb refuses a lone surrogate: read as U+FFFD
            event("good-2"),
            event("broken", data: #"{"a":"#),  // not JSON: refused by the envelope decoder, skipped, counted
        ])
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.records == 6)
        #expect(summary.events == 5 && summary.undecodable == 1)
        #expect(try world.count("select count(*) from events where event_id like 'good-%'") == 2)
        #expect(try world.rows("select data->>'a' from events where event_id = 'surrogate'") == [["\u{FFFD}"]])
        #expect(
            try world.rows("select data->>'_invalid_json' from events where event_id = 'huge-number'") == [
                [#"{"big":1e999999}"#]
            ])
        #expect(try world.rows("select name from events where event_id = 'nul-name'") == [["bad\u{FFFD}name"]])
        // The next batch takes the fast path again.
        try world.write([event("good-3", data: #"{"ok":true}"#)])
        #expect(try aggregator.runOnce().events == 1)
        aggregator.stop()
    }

    @Test("a record whose keys PostgreSQL cannot index is skipped and counted, and loading and rollups go on")
    func unindexableKeys() throws {
        // Such records came from ingest before it bounded link paths and attribution click ids: one
        // failed every later load cycle (a 6 KB path: "index row size exceeds btree maximum").
        let world = try World()
        defer { world.tearDown() }
        let long = String(repeating: "p", count: 6000)
        var openClick = event("long-open", device: "dev-2")
        openClick.attribution = Attribution(openClickID: String(repeating: "o", count: 16_000), openType: "scheme")
        var sdkClickID = event("long-sdk-click-id", device: "dev-3")
        sdkClickID.clickID = String(repeating: "c", count: 500)  // not a key: loaded
        try world.write([
            event("good-1"), click("long-path", path: "/" + long),
            event("long-install", device: "dev-4", installClick: String(repeating: "i", count: 16_000)),
            openClick, sdkClickID, click("good-click"), event("good-2"),
        ])
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.records == 7)
        #expect(summary.undecodable == 3)
        #expect(try world.count("select count(*) from events") == 3)
        #expect(try world.count("select count(*) from events where event_id = 'long-sdk-click-id'") == 1)
        #expect(try world.count("select count(*) from clicks") == 1)
        #expect(try world.count("select count(*) from links") == 1)
        // The rollups of what loaded are current (a 16 KB install click id failed every rollup pass).
        _ = try world.rows("select process_rollups()")
        #expect(try world.count("select count(*) from rollup_devices") == 2)
        aggregator.stop()
    }
}
