import EventModel
import Foundation
import Postgres
import TestSupport
import Testing

@testable import Aggregator

/// Day partitions only for days plausible relative to each row's `received_at` (docs/aggregator.md,
/// "Partitions"): a wrong device clock must not leave a partition behind in every raw table.
@Suite struct PartitionWindowTests {
    @Test(
        "a day is in the window from maxLagDays before the day received to the day after, by UTC day",
        arguments: [
            // (event time, received at, max lag days, in the window)
            ("2024-03-30T00:00:00.000Z", "2024-06-30T23:59:59.999Z", 92, true),  // 92 days back (by day)
            ("2024-03-29T23:59:59.999Z", "2024-06-30T00:00:00.000Z", 92, false),  // 93 days back
            ("2024-07-01T23:59:59.999Z", "2024-06-30T00:00:00.000Z", 92, true),  // the day after
            ("2024-07-02T00:00:00.000Z", "2024-06-30T23:59:59.999Z", 92, false),  // two days ahead
            ("2024-06-30T00:00:00.000Z", "2024-06-30T23:59:59.999Z", 0, true),  // 0: the day received only
            ("2024-06-29T23:59:59.999Z", "2024-06-30T00:00:00.000Z", 0, false),
            ("1970-01-01T00:00:00.000Z", "2024-06-30T12:00:00.000Z", 3660, false),  // a reset clock
            ("1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z", 0, false),  // days before 1970 floor
            // Only days a `_pYYYYMMDD` name can name: year 0000 (1 BC) has none, even when received then.
            ("0000-06-01T00:00:00.000Z", "0000-06-01T00:00:00.000Z", 92, false),
            ("0001-01-01T00:00:00.000Z", "0001-01-01T00:00:00.000Z", 92, true),
            ("9999-12-31T00:00:00.000Z", "9999-12-31T00:00:00.000Z", 92, true),
        ])
    func rule(time: String, receivedAt: String, maxLagDays: Int, expected: Bool) {
        let window = PartitionWindow(maxLagDays: maxLagDays)
        #expect(window.contains(time: ts(time), receivedAt: ts(receivedAt)) == expected)
    }

    @Test("events from reset device clocks are loaded into the default partition and create no partition")
    func wrongClocksStayInDefault() throws {
        let world = try World()
        defer { world.tearDown() }
        let now = Timestamp.now().iso8601
        let today = "events_p" + now.prefix(10).replacingOccurrences(of: "-", with: "")
        var wrongClick = click("clk_1", time: "2000-01-01T00:00:00.000Z")
        wrongClick.receivedAt = ts(now)
        try world.write([
            event("epoch", device: "dev-1", time: "1970-01-01T00:00:00.000Z", receivedAt: now),
            event("billennium", device: "dev-2", time: "2001-09-09T01:46:40.000Z", receivedAt: now),
            event("normal", device: "dev-3", time: now, receivedAt: now),
            wrongClick,
        ])
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.events == 3 && summary.clicks == 1)
        #expect(summary.outsidePartitionWindow == 3)
        #expect(world.registry.render().contains("aggregator_rows_outside_partition_window_total 3\n"))

        // Nothing lost: every row is in its table, the wrong days in the default partition.
        #expect(try world.count("select count(*) from events") == 3)
        #expect(
            try world.rows("select event_id from events_default order by 1") == [["billennium"], ["epoch"]])
        #expect(try world.rows("select click_id from clicks_default") == [["clk_1"]])
        #expect(
            try world.rows("select tableoid::regclass::text from events where event_id = 'normal'") == [[today]])
        // No partition for the wrong days, in any raw table.
        #expect(try partitions(world).filter { $0.suffix(8) < "2020" } == [])
        // Their rollups and devices are there all the same (reports count them).
        #expect(try world.count("select sum(events)::int from rollup_events_daily") == 3)
        #expect(try world.count("select count(*) from devices") == 3)

        // The same envelopes again (a client's retry): nothing new, so nothing more is counted.
        try world.write([event("epoch", device: "dev-1", time: "1970-01-01T00:00:00.000Z", receivedAt: now)])
        let retry = try aggregator.runOnce()
        #expect(retry.records == 1 && retry.events == 0 && retry.outsidePartitionWindow == 0)
        #expect(world.registry.render().contains("aggregator_rows_outside_partition_window_total 3\n"))
        aggregator.stop()
    }

    @Test("an event received today for a day ten days ago gets that day's partition")
    func lateEventWithinWindow() throws {
        let world = try World()
        defer { world.tearDown() }
        let now = Timestamp.now()
        let tenDaysAgo = Timestamp(microseconds: now.microseconds - 10 * 86_400_000_000).iso8601
        let partition = "events_p" + tenDaysAgo.prefix(10).replacingOccurrences(of: "-", with: "")
        try world.write([event("late", time: tenDaysAgo, receivedAt: now.iso8601)])
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.events == 1 && summary.outsidePartitionWindow == 0)
        #expect(try world.rows("select tableoid::regclass::text from events") == [[partition]])
        #expect(try world.count("select count(*) from events_default") == 0)
        aggregator.stop()
    }

    @Test("the window's edge: exactly partitionMaxLagDays back gets a partition, a day more stays in the default")
    func windowEdgeInDatabase() throws {
        let world = try World()
        defer { world.tearDown() }
        var configuration = world.configuration()
        configuration.partitionMaxLagDays = 5
        let received = "2024-06-30T23:59:59.000Z"
        try world.write([
            event("in", device: "dev-1", time: "2024-06-25T00:00:00.000Z", receivedAt: received),
            event("out", device: "dev-2", time: "2024-06-24T23:59:59.000Z", receivedAt: received),
        ])
        let aggregator = try world.aggregator(configuration)
        let summary = try aggregator.runOnce()
        #expect(summary.events == 2 && summary.outsidePartitionWindow == 1)
        #expect(
            try world.rows("select event_id, tableoid::regclass::text from events order by 1")
                == [["in", "events_p20240625"], ["out", "events_default"]])
        #expect(try partitions(world).filter { $0.hasSuffix("_p20240624") } == [])
        aggregator.stop()
    }

    @Test("a replay into a rebuilt database creates the partitions the original load created")
    func replayCreatesSamePartitions() throws {
        let world = try World()
        defer { world.tearDown() }
        // Received in 2024, loaded now: the window follows each row's received_at, not the loader's clock.
        let received = "2024-03-10T12:00:00.000Z"
        var wrongMatch = match("clk_1", time: "1970-01-01T00:00:05.000Z")
        wrongMatch.receivedAt = ts(received)
        try world.write([
            event("a", device: "dev-1", time: "2024-03-01T08:00:00.000Z", receivedAt: received),
            event("b", device: "dev-2", time: "2024-03-10T11:00:00.000Z", receivedAt: received),
            event("c", device: "dev-3", time: "2024-03-11T09:00:00.000Z", receivedAt: received),
            event("d", device: "dev-4", time: "1970-01-01T00:00:00.000Z", receivedAt: received),
            wrongMatch,
        ])
        try world.write(
            [event("e", device: "dev-5", time: "2023-11-30T10:00:00.000Z", receivedAt: "2024-03-11T10:00:00.000Z")],
            newSegment: true)
        let aggregator = try world.aggregator()
        _ = try aggregator.runUntilCaughtUp()
        aggregator.stop()
        // Only the days the rows brought (the days kept ready ahead of the loader's today are 2025 or later).
        let expected = ["events", "clicks", "matches"].flatMap { table in
            ["_p20240301", "_p20240310", "_p20240311"].map { table + $0 }
        }
        let original = try partitions(world).filter { $0.suffix(8) < "2025" }
        #expect(original == expected.sorted())

        let rebuilt = try TestDatabase.make()
        defer { rebuilt.drop() }
        var configuration = world.configuration()
        configuration.databaseURL = rebuilt.url
        let summary = try Replay(configuration: configuration).replay(fromSegment: 0)
        #expect(summary.rows == 6)
        let connection = try rebuilt.connect()
        defer { connection.close() }
        let replayed = try Self.partitions(connection).filter { $0.suffix(8) < "2025" }
        #expect(replayed == original)
        #expect(try connection.query("select count(*) from events_default")[0][0, as: Int.self] == 2)
    }

    @Test("partitionMaxLagDays is checked: 0...3660, default 92")
    func configurationChecked() {
        var configuration = AggregatorConfiguration(databaseURL: "postgresql://x", dataDirectory: "/tmp/x")
        #expect(configuration.partitionMaxLagDays == 92)
        for valid in [0, 92, 3660] {
            configuration.partitionMaxLagDays = valid
            #expect(throws: Never.self) { try configuration.validate() }
        }
        for invalid in [-1, 3661, Int.max] {
            configuration.partitionMaxLagDays = invalid
            #expect {
                try configuration.validate()
            } throws: { error in
                guard case .invalidConfiguration(let field, let reason) = error as? AggregatorError else {
                    return false
                }
                return field == "partitionMaxLagDays" && reason == "must be 0...3660"
            }
        }
    }

    /// Every partition of the three raw tables, by name, sorted (the default partitions excluded).
    private func partitions(_ world: World) throws -> [String] {
        let connection = try world.connect()
        defer { connection.close() }
        return try Self.partitions(connection)
    }

    private static func partitions(_ connection: Connection) throws -> [String] {
        let result = try connection.query(
            """
            select c.relname::text from pg_inherits i join pg_class c on c.oid = i.inhrelid
            where i.inhparent in ('events'::regclass, 'clicks'::regclass, 'matches'::regclass)
              and c.relname not like '%_default'
            order by 1
            """)
        return try result.map { try $0[0, as: String.self] }
    }

    @Test("a day whose partition could not be created is tried again after a later cycle, and its rows move into it")
    func failedPartitionIsRetried() throws {
        let world = try World()
        defer { world.tearDown() }
        let connection = try world.connect()
        defer { connection.close() }
        // A type named like the partition makes its CREATE TABLE fail (the table's row type clashes).
        try connection.unsafeSQL("create domain events_p20240315 as int")
        try world.write([event("late-1", time: "2024-03-15T10:00:00.000Z")])
        let aggregator = try world.aggregator()
        #expect(try aggregator.runOnce().events == 1)
        #expect(try world.count("select count(*) from pg_class where relname = 'events_p20240315'") == 0)
        #expect(try world.count("select count(*) from events_default where event_id = 'late-1'") == 1)

        try connection.unsafeSQL("drop domain events_p20240315")
        // A later cycle with rows of another day only: the failed day is created too.
        try world.write([event("late-2", time: "2024-03-20T10:00:00.000Z")])
        #expect(try aggregator.runOnce().events == 1)
        #expect(try world.count("select count(*) from events_p20240315 where event_id = 'late-1'") == 1)
        #expect(try world.count("select count(*) from events_p20240320 where event_id = 'late-2'") == 1)
        #expect(try world.count("select count(*) from events_default") == 0)
        #expect(try world.count("select count(*) from pg_class where relname = 'clicks_p20240315'") == 1)
        aggregator.stop()
    }
}
