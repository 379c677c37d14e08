import EventModel
import Foundation
import Postgres
import Testing

@testable import Aggregator

@Suite struct RollupTests {
    private static let rollupQuery: SQL =
        "select app_id, day::text, kind, name, events::text, devices::text from rollup_events_daily order by 1, 2, 3, 4"

    @Test("rollups after many cycles with late and duplicate data equal a from-scratch rebuild")
    func incrementalEqualsRebuild() throws {
        let world = try World()
        defer { world.tearDown() }
        var configuration = world.configuration()
        configuration.maxEventsPerCycle = 70
        let aggregator = try world.aggregator(configuration)
        var generator = SystemRandomNumberGenerator()
        var written = 0
        for round in 0..<6 {
            var batch: [Envelope] = []
            for index in 0..<90 {
                let day = Int.random(in: 1...9, using: &generator)
                let id = Int.random(in: 0..<(written + 90), using: &generator)  // some re-sends of old ids
                batch.append(
                    event(
                        "r-\(id)", app: ["app_1", "app_2"][index % 2], name: ["purchase", "app_open", "share"][id % 3],
                        device: "dev-\(id % 23)", time: "2026-05-0\(day)T0\(round):00:00.000Z",
                        kind: id % 3 == 1 ? .retention : .event))
            }
            written += 90
            try world.write(batch, node: round % 2 == 0 ? "node-1" : "node-2")
            _ = try aggregator.runOnce()
        }
        _ = try aggregator.runUntilCaughtUp()
        let incremental = try world.rows(Self.rollupQuery)
        #expect(!incremental.isEmpty)
        try Replay(configuration: configuration).rebuildRollups()
        #expect(try world.rows(Self.rollupQuery) == incremental)
        // And the rollups agree with the raw table.
        #expect(
            try world.count("select sum(events)::int from rollup_events_daily")
                == world.count("select count(*) from events"))
        aggregator.stop()
    }

    /// Every rollup table, each row as text, in a stable order; with `exact`, each row's UTF-8 bytes
    /// in hex (Swift's `String ==` would take an NFC and an NFD spelling for the same row).
    private static func allRollups(_ world: World, exact: Bool = false) throws -> [String: [[String?]]] {
        var tables: [String: [[String?]]] = [:]
        for table in [
            "rollup_events_daily", "rollup_devices", "rollup_funnel_entries", "rollup_link_daily",
            "rollup_link_utm_daily",
            "rollup_link_events_daily", "rollup_link_revenue_daily", "rollup_cohort_events_daily",
            "rollup_cohort_revenue_daily", "rollup_installs_daily", "rollup_retention_daily", "rollup_funnel_daily",
            "rollup_apps", "rollup_clicks",
        ] {
            tables[table] =
                exact
                ? try world.rows(
                    "select encode(convert_to(t::text, 'UTF8'), 'hex') from \(identifier: table) t order by 1")
                : try world.rows("select t::text from \(identifier: table) t order by 1")
        }
        return tables
    }

    @Test(
        "cycles only queue rollup work; after a rollup pass the rollups equal a from-scratch rebuild",
        arguments: [
            [:],
            // Reporting days that are not UTC days: a UTC day's rows fall on two local days (LA) or
            // on a local day shifted by a non-whole hour (Kathmandu, +05:45).
            ["app_1": "America/Los_Angeles", "app_2": "Asia/Kathmandu"],
        ])
    func queuedCyclesThenProcessEqualRebuild(timeZones: [String: String]) throws {
        let world = try World()
        defer { world.tearDown() }
        for (app, zone) in timeZones.sorted(by: { $0.key < $1.key }) {
            let connection = try world.connect()
            defer { connection.close() }
            try connection.execute("insert into apps (id, name, time_zone) values (\(app), \(app), \(zone))")
        }
        var configuration = world.configuration()
        configuration.maxEventsPerCycle = 40
        configuration.rollupInterval = .seconds(3600)  // no pass while cycles bring new rows
        let aggregator = try world.aggregator(configuration)
        try aggregator.processRollups()  // the start-up pass (an empty queue)
        var generator = SystemRandomNumberGenerator()
        var batch: [Envelope] = []
        for index in 0..<150 {
            let id = Int.random(in: 0..<120, using: &generator)  // duplicates inside and across cycles
            let day = 1 + id % 7
            switch index % 10 {
            case 8:
                batch.append(click("q-click-\(id % 30)", app: "app_1", time: "2026-05-0\(day)T07:00:00.000Z"))
            case 9:
                batch.append(match("q-click-\(id % 30)", app: "app_1", time: "2026-05-0\(day)T07:30:00.000Z"))
            default:
                batch.append(
                    event(
                        "q-\(id)", app: ["app_1", "app_2"][id % 2], name: ["purchase", "app_open", "share"][id % 3],
                        device: "dev-\(id % 17)", time: "2026-05-0\(day)T0\(id % 10):00:00.000Z",
                        installClick: id % 5 == 0 ? "q-click-\(id % 30)" : nil, kind: id % 3 == 1 ? .retention : .event)
                )
            }
        }
        for start in stride(from: 0, to: batch.count, by: 10) {  // one frame per write: cycles split between them
            try world.write(Array(batch[start..<start + 10]))
        }
        // Bounded: 150 records at 40 per cycle; every cycle but the last has a backlog.
        var summaries: [CycleSummary] = []
        for _ in 0..<10 {
            let summary = try aggregator.runOnce()
            summaries.append(summary)
            if !summary.backlog { break }
        }
        #expect(summaries.count >= 4)
        #expect(summaries.allSatisfy { $0.rollupDuration == nil })  // within rollupInterval: only queued
        #expect(summaries.contains { $0.touchedKeys > 0 })
        // The queue holds exactly the work of the loaded rows (none processed yet): every local day
        // they fall on, every device with its earliest event, every loaded click, the newest event per app.
        #expect(
            try world.rows("select app_id, day::text from rollup_pending_keys order by 1, 2")
                == world.rows(
                    """
                    select distinct x.app_id, (x.at at time zone coalesce(a.time_zone, 'UTC'))::date::text
                    from (select app_id, event_time as at from events union all select app_id, click_time from clicks
                          union all select app_id, match_time from matches) x
                    left join apps a on a.id = x.app_id order by 1, 2
                    """))
        #expect(
            try world.rows(
                """
                select app_id, device_id, min(min_time)::text from (
                    select app_id, device_id, min_time from rollup_pending_devices
                    union all
                    select u.app_id, u.device_id, u.min_time from rollup_pending_device_batches b
                    cross join lateral unnest(b.app_ids, b.device_ids, b.min_times) as u(app_id, device_id, min_time)
                ) x group by 1, 2 order by 1, 2
                """)
                == world.rows("select app_id, device_id, min(event_time)::text from events group by 1, 2 order by 1, 2")
        )
        // The cycles queued their devices and clicks as one batch row each (sql/061), not one row each.
        #expect(try world.count("select count(*) from rollup_pending_devices") == 0)
        #expect(try world.count("select count(*) from rollup_pending_device_batches") > 0)
        // (A click sent again with another time is queued too, as 051 does: harmless extra work.)
        #expect(
            try world.count(
                """
                select count(*) from clicks c where not exists (select 1 from (
                    select app_id, click_id, click_time from rollup_pending_clicks
                    union all
                    select u.app_id, u.click_id, u.click_time from rollup_pending_click_batches b
                    cross join lateral unnest(b.app_ids, b.click_ids, b.click_times) as u(app_id, click_id, click_time)
                ) p where p.app_id = c.app_id and p.click_id = c.click_id and p.click_time = c.click_time)
                """) == 0)
        #expect(
            try world.rows("select app_id, newest_event_at::text from rollup_apps order by 1")
                == world.rows("select app_id, max(event_time)::text from events group by 1 order by 1"))
        // A cycle that finds nothing new (idle) processes the queue at once.
        let idle = try aggregator.runOnce()
        #expect(idle.records == 0 && idle.rollupDuration != nil)
        #expect(try world.count("select count(*) from rollup_pending_keys") == 0)
        #expect(try world.count("select count(*) from rollup_pending_devices") == 0)
        #expect(try world.count("select count(*) from rollup_pending_device_batches") == 0)
        #expect(try world.count("select count(*) from rollup_pending_click_batches") == 0)
        #expect(try world.count("select count(*) from rollup_pending_utc_days") == 0)
        let incremental = try Self.allRollups(world)
        #expect(!(incremental["rollup_events_daily"] ?? []).isEmpty)
        try Replay(configuration: configuration).rebuildRollups()
        #expect(try Self.allRollups(world) == incremental)
        aggregator.stop()
    }

    @Test("ids, device ids and paths that differ only by Unicode normalisation stay distinct, as PostgreSQL keeps them")
    func normalisationVariantsAreDistinct() throws {
        let world = try World()
        defer { world.tearDown() }
        // NFC and NFD spellings: one string to Swift's `==`, two to PostgreSQL's `text`.
        let (idNFC, idNFD) = ("caf\u{E9}-1", "cafe\u{301}-1")
        let (deviceNFC, deviceNFD) = ("d\u{E9}v", "de\u{301}v")
        let (clickNFC, clickNFD) = ("clic-\u{E9}", "clic-e\u{301}")
        #expect(idNFC == idNFD && deviceNFC == deviceNFD)
        try world.write([
            event(idNFC, device: deviceNFC, time: "2026-06-01T10:00:00.000Z"),
            event(idNFD, device: deviceNFD, time: "2026-06-01T11:00:00.000Z", installClick: clickNFD),
            click(clickNFC, path: "/caf\u{E9}"), click(clickNFD, path: "/cafe\u{301}"),
            match(clickNFC), match(clickNFD),
        ])
        let aggregator = try world.aggregator()
        let first = try aggregator.runOnce()
        #expect(first.events == 2 && first.clicks == 2 && first.matches == 2)
        // A deduplicating cycle (one row is a duplicate of the first cycle's) with a new pair.
        try world.write([
            event(idNFD, device: deviceNFD, time: "2026-06-01T11:00:00.000Z"),
            event("caf\u{E9}-2", device: deviceNFC, time: "2026-06-01T09:00:00.000Z"),
            event("cafe\u{301}-2", device: deviceNFD, time: "2026-06-01T08:00:00.000Z"),
        ])
        #expect(try aggregator.runOnce().events == 2)
        func hex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }
        #expect(
            try world.rows("select encode(convert_to(event_id, 'UTF8'), 'hex') from events order by 1")
                == [idNFC, idNFD, "caf\u{E9}-2", "cafe\u{301}-2"].map { [hex($0)] }.sorted { $0[0]! < $1[0]! })
        #expect(
            try world.rows(
                "select encode(convert_to(device_id, 'UTF8'), 'hex'), first_seen::text, (install_click_id is not null)::text from devices order by 1"
            )
                == [
                    [hex(deviceNFC), "2026-06-01 09:00:00+00", "false"],
                    [hex(deviceNFD), "2026-06-01 08:00:00+00", "true"],
                ].sorted { $0[0]! < $1[0]! })
        #expect(try world.count("select count(*) from links") == 2)
        #expect(try world.count("select count(*) from clicks") == 2 && world.count("select count(*) from matches") == 2)
        let incremental = try Self.allRollups(world, exact: true)
        #expect(!(incremental["rollup_devices"] ?? []).isEmpty)
        try Replay(configuration: world.configuration()).rebuildRollups()
        #expect(try Self.allRollups(world, exact: true) == incremental)
        aggregator.stop()
    }

    @Test("while cycles bring new rows the rollups wait in the queue until a pass applies them")
    func backlogLeavesWorkQueued() throws {
        let world = try World()
        defer { world.tearDown() }
        var configuration = world.configuration()
        configuration.maxEventsPerCycle = 10
        configuration.rollupInterval = .seconds(3600)
        let aggregator = try world.aggregator(configuration)
        try aggregator.processRollups()
        let events = manyEvents(25)
        for start in stride(from: 0, to: 25, by: 5) { try world.write(Array(events[start..<start + 5])) }
        let first = try aggregator.runOnce()
        #expect(first.backlog && first.events == 10 && first.rollupDuration == nil)
        #expect(try world.count("select count(*) from events") == 10)
        #expect(try world.count("select count(*) from rollup_pending_utc_days") > 0)
        #expect(try world.count("select coalesce(sum(events), 0)::int from rollup_events_daily") == 0)
        let keys = try aggregator.processRollups()
        #expect(keys > 0)
        #expect(try world.count("select sum(events)::int from rollup_events_daily") == 10)
        #expect(try world.count("select count(*) from rollup_pending_utc_days") == 0)
        // runUntilCaughtUp (aggregate --once) ends with the queue processed.
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select sum(events)::int from rollup_events_daily") == 25)
        #expect(try world.count("select count(*) from rollup_pending_keys") == 0)
        aggregator.stop()
    }

    @Test("a pass gives a new day partition statistics and leaves the session's work_mem as it was")
    func passAnalysesNewPartitionAndRestoresWorkMem() throws {
        let world = try World()
        defer { world.tearDown() }
        var configuration = world.configuration()
        configuration.rollupInterval = .seconds(3600)
        let aggregator = try world.aggregator(configuration)
        try aggregator.processRollups()
        // Today's partition exists ahead of the rows (created empty at start-up), so it has no statistics.
        let today = String(ISO8601DateFormatter().string(from: Date()).prefix(10))
        let partition = "events_p" + today.replacingOccurrences(of: "-", with: "")
        try world.write([event("a", time: today + "T00:00:01.000Z"), event("b", time: today + "T00:00:02.000Z")])
        _ = try aggregator.runOnce()
        let statistics: SQL = "select (reltuples >= 0)::text from pg_class where oid = to_regclass(\(partition))"
        #expect(try world.rows(statistics) == [["false"]])
        let connection = try world.connect()
        defer { connection.close() }
        try connection.unsafeSQL("SET work_mem = '4MB'")
        let keys = try connection.query("SELECT process_rollups()")
        #expect(try keys[0][0, as: Int.self] == 1)
        #expect(try world.rows(statistics) == [["true"]])
        #expect(try world.rows("select sum(events)::text from rollup_events_daily") == [["2"]])
        #expect(try connection.query("SHOW work_mem")[0][0, as: String.self] == "4MB")
        aggregator.stop()
    }

    @Test("a pass refreshes the statistics of a day partition that grew past twice its analysed size")
    func passReanalysesGrownPartition() throws {
        let world = try World()
        defer { world.tearDown() }
        let aggregator = try world.aggregator()  // rollupInterval 0: a pass after every loading cycle
        let day = "2026-06-01"
        try world.write((0..<20).map { event("small-\($0)", device: "dev-\($0)", time: day + "T10:00:00.000Z") })
        _ = try aggregator.runUntilCaughtUp()
        let estimate: SQL = "select reltuples::int from pg_class where oid = to_regclass('events_p20260601')"
        #expect(try world.count(estimate) == 20)  // analysed by the pass (sql/062: never analysed before)
        // Autovacuum would analyse it at some point after the load; the pass must not depend on that.
        let connection = try world.connect()
        defer { connection.close() }
        try connection.unsafeSQL("ALTER TABLE events_p20260601 SET (autovacuum_enabled = off)")
        // A backlog for the same day (an outage's worth, in miniature): the partition grows 150-fold.
        let big = (0..<3000).map { event("big-\($0)", device: "dev-\($0)", time: day + "T11:00:00.000Z") }
        try world.write(big)
        _ = try aggregator.runUntilCaughtUp()
        #expect(try world.count("select count(*) from events_p20260601") == 3020)
        // Planned from the 20-row statistics, the pass over 100,000 such events took over 10 minutes
        // instead of 3 s; with fresh statistics the estimate is the partition's size.
        #expect(try world.count(estimate) == 3020)
        #expect(try world.count("select sum(events)::int from rollup_events_daily") == 3020)
        aggregator.stop()
    }

    @Test("a late event for an old day lands in that day's partition and corrects that day's rollup")
    func lateEventOldDay() throws {
        let world = try World()
        defer { world.tearDown() }
        let aggregator = try world.aggregator()
        try world.write([event("a", time: "2026-06-10T10:00:00.000Z"), event("b", time: "2026-06-10T11:00:00.000Z")])
        _ = try aggregator.runOnce()
        try world.write([
            event("late", device: "dev-9", time: "2026-04-02T08:00:00.000Z", receivedAt: "2026-06-10T12:00:00.000Z")
        ])
        let summary = try aggregator.runOnce()
        #expect(summary.events == 1 && summary.touchedKeys == 1)
        #expect(
            try world.rows("select tableoid::regclass::text from events where event_id = 'late'") == [
                ["events_p20260402"]
            ])
        #expect(
            try world.rows("select day::text, events::text from rollup_events_daily order by 1")
                == [["2026-04-02", "1"], ["2026-06-10", "2"]])
        // The late event is the device's earliest: its first_seen moves back.
        #expect(
            try world.rows("select first_seen::text from devices where device_id = 'dev-9'") == [
                ["2026-04-02 08:00:00+00"]
            ])
        aggregator.stop()
    }

    @Test("the earliest install click wins, and a late older event corrects it")
    func installClickEarliestWins() throws {
        let world = try World()
        defer { world.tearDown() }
        let aggregator = try world.aggregator()
        try world.write([
            event("1", device: "d", time: "2026-06-05T10:00:00.000Z"),
            event("2", device: "d", time: "2026-06-05T11:00:00.000Z", installClick: "clk_late"),
        ])
        _ = try aggregator.runOnce()
        #expect(
            try world.rows("select install_click_id, first_seen::text from devices") == [
                ["clk_late", "2026-06-05 10:00:00+00"]
            ])
        try world.write([event("3", device: "d", time: "2026-06-06T10:00:00.000Z", installClick: "clk_newer")])
        _ = try aggregator.runOnce()
        #expect(try world.rows("select install_click_id from devices") == [["clk_late"]])
        try world.write([event("0", device: "d", time: "2026-06-04T09:00:00.000Z", installClick: "clk_first")])
        _ = try aggregator.runOnce()
        #expect(
            try world.rows("select install_click_id, first_seen::text from devices") == [
                ["clk_first", "2026-06-04 09:00:00+00"]
            ])
        aggregator.stop()
    }
}
