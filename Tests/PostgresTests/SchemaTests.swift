import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct SchemaTests {
    @Test("ensure_day_partitions creates each UTC day once and routes rows to it")
    func dailyPartitions() throws {
        let db = try TestDatabase.make()
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let created = try connection.query(
            "select ensure_day_partitions('events', \("2026-06-01")::date, \("2026-06-03")::date) as n")
        #expect(try created.first?["n", as: Int.self] == 3)
        let again = try connection.query(
            "select ensure_day_partitions('events', \("2026-05-31")::date, \("2026-06-03")::date) as n")
        #expect(try again.first?["n", as: Int.self] == 1)
        try insertEvent(connection, id: "e1", time: "2026-06-02T23:59:59.999Z")
        try insertEvent(connection, id: "e2", time: "2026-06-03T00:00:00.000Z")
        let rows = try connection.query(
            "select event_id, tableoid::regclass::text as part from events order by event_id")
        #expect(try rows.map { try $0["part", as: String.self] } == ["events_p20260602", "events_p20260603"])
        for table in ["clicks", "matches"] {
            let n = try connection.query(
                "select ensure_day_partitions(\(table)::regclass, \("2026-06-01")::date, \("2026-06-01")::date) as n")
            #expect(try n.first?["n", as: Int.self] == 1)
        }
    }

    @Test("the default partition catches a far-future event, and a later partition takes it over")
    func defaultPartition() throws {
        let db = try TestDatabase.make()
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try insertEvent(connection, id: "future", time: "2099-12-31T12:00:00.000Z")
        try insertEvent(connection, id: "past", time: "2001-01-01T00:00:00.000Z")
        var where_ = try connection.query(
            "select tableoid::regclass::text as part from events where event_id = 'future'")
        #expect(try where_.first?["part", as: String.self] == "events_default")
        _ = try connection.query("select ensure_day_partitions('events', '2099-12-30', '2099-12-31')")
        where_ = try connection.query("select tableoid::regclass::text as part from events where event_id = 'future'")
        #expect(try where_.first?["part", as: String.self] == "events_p20991231")
        #expect(try connection.query("select count(*) as n from events").first?["n", as: Int.self] == 2)
    }

    @Test("the dedup table keeps an event id once even with a different event time")
    func dedupTable() throws {
        let db = try TestDatabase.make()
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let first = try connection.query(
            "insert into event_ids values ('app', 'e1', '2026-06-01Z') on conflict do nothing returning event_id")
        let second = try connection.query(
            "insert into event_ids values ('app', 'e1', '2026-06-02Z') on conflict do nothing returning event_id")
        #expect(first.count == 1)
        #expect(second.count == 0)
    }

    @Test("apps get the documented default settings and keys are stored by hash")
    func appsAndKeys() throws {
        let db = try TestDatabase.make()
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("insert into apps (id, name) values (\("acme"), \("Acme"))")
        let app = try #require(
            try connection.query(
                """
                select time_zone, extract(epoch from install_lookback)::bigint as lookback,
                       extract(epoch from conversion_window)::bigint as window_s from apps
                """
            ).first)
        #expect(try app["time_zone", as: String.self] == "UTC")
        #expect(try app["lookback", as: Int.self] == 7 * 86_400)
        #expect(try app["window_s", as: Int.self] == 7 * 86_400)
        try connection.execute(
            """
            insert into api_keys (app_id, key_hash, kind, prefix)
            values ('acme', encode(sha256(convert_to(\("pk_live_abc"), 'UTF8')), 'hex'), 'publishable', 'pk_live_a')
            """)
        let bad = #expect(throws: PostgresError.self) {
            try connection.execute(
                "insert into api_keys (app_id, key_hash, kind, prefix) values ('acme', 'x', 'secret', 's')")
        }
        #expect(bad?.sqlState == "23514")
    }

    private func insertEvent(_ connection: Connection, id: String, time: String) throws {
        try connection.execute(
            """
            insert into events (app_id, event_id, kind, name, device_id, platform, event_time, received_at)
            values ('app', \(id), 'event', 'app_open', 'dev-1', 'ios', \(time)::timestamptz, now())
            """)
    }
}
