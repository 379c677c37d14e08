import EventModel
import Foundation
import Postgres
import Testing

@testable import Aggregator

/// Times at the edges of what the log holds (its ISO-8601 form: years 0000-9999) reach PostgreSQL in
/// a form it accepts on every path: the optimistic load, the safe-cast fallback, a replay.
/// Year 0000 is 1 BC to PostgreSQL; written as `0000-...` it was refused (SQLSTATE 22008) and one
/// such click stopped all loading for good.
@Suite struct TimestampRangeTests {
    private static let yearZero = "0000-06-01T00:00:00.000Z"
    private static let lastDay = "9999-12-31T23:59:59.999Z"
    private static let received = "2026-06-01T12:00:00.000Z"

    /// An event, a click and a match dated 0000-06-01 (the click and the match also received then), and
    /// an event dated 9999-12-31.
    private static func edgeRecords(prefix: String) -> [Envelope] {
        [
            event("\(prefix)-e0", device: "\(prefix)-dev-0", time: yearZero, receivedAt: received),
            click("\(prefix)-c0", time: yearZero),
            match("\(prefix)-c0", time: yearZero),
            event("\(prefix)-e9", device: "\(prefix)-dev-9", time: lastDay, receivedAt: received),
        ]
    }

    /// The rows of `edgeRecords` found with the times PostgreSQL should hold.
    private static func edgeRowsLoaded(_ world: World, prefix: String) throws -> Int {
        let zero: SQL = "'0001-06-01 00:00:00+00 BC'::timestamptz"
        let last: SQL = "'9999-12-31 23:59:59.999+00'::timestamptz"
        return try world.count(
            """
            select (select count(*) from events where event_id = \(prefix + "-e0") and event_time = \(fragment: zero)
                      and client_ts = \(fragment: zero))
                 + (select count(*) from clicks where click_id = \(prefix + "-c0") and click_time = \(fragment: zero)
                      and received_at = \(fragment: zero))
                 + (select count(*) from matches where click_id = \(prefix + "-c0") and match_time = \(fragment: zero))
                 + (select count(*) from events where event_id = \(prefix + "-e9") and event_time = \(fragment: last))
                 + (select count(*) from devices where device_id = \(prefix + "-dev-0") and first_seen = \(fragment: zero))
            """)
    }

    @Test("a click, a match and an event dated in year 0000 are loaded by a cycle, and loading goes on")
    func yearZeroInACycle() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(Self.edgeRecords(prefix: "a"))
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.events == 2 && summary.clicks == 1 && summary.matches == 1)
        #expect(try Self.edgeRowsLoaded(world, prefix: "a") == 5)
        // The next cycle deduplicates first (a duplicate of the year-0000 click) and still loads.
        try world.write([click("a-c0", time: Self.yearZero), event("a-next")])
        #expect(try aggregator.runOnce().events == 1)
        #expect(try world.count("select count(*) from events") == 3)
        aggregator.stop()
    }

    @Test("year-0000 rows in a batch that falls back to safe casts (text event rows) are loaded")
    func yearZeroWithSafeCasts() throws {
        let world = try World()
        defer { world.tearDown() }
        var records = Self.edgeRecords(prefix: "s")
        records.append(event("s-huge", time: Self.yearZero, receivedAt: Self.received, data: #"{"big":1e999999}"#))
        try world.write(records)
        let aggregator = try world.aggregator()
        let summary = try aggregator.runOnce()
        #expect(summary.events == 3 && summary.clicks == 1 && summary.matches == 1)
        #expect(try Self.edgeRowsLoaded(world, prefix: "s") == 5)
        #expect(
            try world.rows("select data->>'_invalid_json' from events where event_id = 's-huge'") == [
                [
                    #"{"big":1e999999}"#
                ]
            ])
        aggregator.stop()
    }

    @Test("a replay loads year-0000 rows, and a second replay adds nothing")
    func yearZeroReplayed() throws {
        let world = try World()
        defer { world.tearDown() }
        try world.write(Self.edgeRecords(prefix: "r"))
        let replay = try Replay(configuration: world.configuration())
        #expect(try replay.replay(fromSegment: 0).rows == 4)
        #expect(try Self.edgeRowsLoaded(world, prefix: "r") == 5)
        #expect(try replay.replay(fromSegment: 0).rows == 0)
        // Rollups kept incrementally over year 0000 equal a rebuild.
        let incremental = try world.rows("select t::text from rollup_events_daily t order by 1")
        #expect(!incremental.isEmpty)
        try replay.rebuildRollups()
        #expect(try world.rows("select t::text from rollup_events_daily t order by 1") == incremental)
    }

    @Test(
        "timestamps in COPY text: PostgreSQL's input form, year 0000 as 1 BC, microseconds kept",
        arguments: [
            ("0000-06-01T00:00:00.000Z", "0001-06-01 00:00:00.000000+00 BC"),
            ("0000-01-01T00:00:00.000Z", "0001-01-01 00:00:00.000000+00 BC"),
            ("0000-01-01T00:00:00+01:00", "0002-12-31 23:00:00.000000+00 BC"),
            ("0001-01-01T00:00:00.000Z", "0001-01-01 00:00:00.000000+00"),
            ("1969-12-31T23:59:59.999999Z", "1969-12-31 23:59:59.999999+00"),
            ("2026-06-01T10:00:00.123456Z", "2026-06-01 10:00:00.123456+00"),
            ("9999-12-31T23:59:59.999Z", "9999-12-31 23:59:59.999000+00"),
            ("9999-12-31T23:00:00-05:00", "10000-01-01 04:00:00.000000+00"),
        ])
    func textTimestamps(iso: String, expected: String) {
        var out: [UInt8] = []
        StagingEncoder.appendTimestampText(ts(iso), to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    @Test("every timestamp COPY text writes is read back by PostgreSQL as the same instant")
    func textTimestampsRoundTrip() throws {
        let world = try World()
        defer { world.tearDown() }
        let connection = try world.connect()
        defer { connection.close() }
        try connection.unsafeSQL("create temp table t (i int, at timestamptz)")
        let times = [
            "0000-01-01T00:00:00+23:59", "0000-02-29T12:00:00.000Z", "0000-06-01T00:00:00.000Z",
            "0001-01-01T00:00:00.000Z",
            "1969-12-31T23:59:59.999999Z", "2026-06-01T10:00:00.123456Z", "9999-12-31T23:59:59.999Z",
            "9999-12-31T23:00:00-05:00",
        ].map(ts)
        var rows: [UInt8] = []
        for (index, time) in times.enumerated() {
            rows.append(contentsOf: "\(index)\t".utf8)
            StagingEncoder.appendTimestampText(time, to: &rows)
            rows.append(0x0A)
        }
        _ = try connection.copyIn("copy t (i, at) from stdin") { $0.append(rows[...]) }
        let stored = try connection.query(
            "select i, (extract(epoch from at) * 1000000)::bigint::text as micros from t order by i")
        let micros = try stored.map { try $0["micros", as: String.self] }
        #expect(micros == times.map { "\($0.microseconds)" })
    }
}
