import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct BindingTests {
    @Test("every supported type round-trips through a bind parameter")
    func roundTrips() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }

        let row = try #require(
            try connection.query(
                """
                select \(42)::int as i, \(Int64.max)::bigint as big, \(Int64.min)::bigint as small,
                       \(3.25)::float8 as d, \("héllo ☃ 𝄞 'quoted' \"dq\" \\ back")::text as s,
                       \(true)::bool as t, \(false)::bool as f, \(Decimal(string: "12345678901234567890.123456789")!)::numeric as n
                """
            ).first)
        #expect(try row["i", as: Int.self] == 42)
        #expect(try row["big", as: Int64.self] == .max)
        #expect(try row["small", as: Int64.self] == .min)
        #expect(try row["d", as: Double.self] == 3.25)
        #expect(try row["s", as: String.self] == "héllo ☃ 𝄞 'quoted' \"dq\" \\ back")
        #expect(try row["t", as: Bool.self] == true)
        #expect(try row["f", as: Bool.self] == false)
        #expect(try row["n", as: Decimal.self] == Decimal(string: "12345678901234567890.123456789")!)
        #expect(try row["n", as: String.self] == "12345678901234567890.123456789")
    }

    @Test("nil binds as NULL and NULL decodes as nil")
    func nulls() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let none: String? = nil
        let someInt: Int? = 7
        let row = try #require(
            try connection.query("select \(none)::text as a, \(someInt)::int as b, \(none)::text is null as isnull")
                .first)
        #expect(try row["a", as: String?.self] == nil)
        #expect(try row["b", as: Int?.self] == 7)
        #expect(try row["isnull", as: Bool.self])
        #expect(row.isNull("a"))
    }

    @Test("withBytes gives a column's text as libpq holds it: every byte, empty for NULL, no copy kept")
    func withBytes() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let text = "héllo ☃ 𝄞," + String(repeating: "x", count: 100_000)
        let none: String? = nil
        let result = try connection.query("select \(text)::text as s, \(none)::text as n, ''::text as e")
        let row = try #require(result.first)
        #expect(try row.withBytes(0) { Array($0) } == Array(text.utf8))
        #expect(try row.withBytes(1) { $0.count } == 0)
        #expect(try row.withBytes(2) { $0.count } == 0)
        #expect(throws: PostgresError.self) { try row.withBytes(3) { $0.count } }
        #expect(throws: PostgresError.self) { try row.withBytes(-1) { $0.count } }
    }

    @Test("bytea round-trips every byte value")
    func bytea() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table blobs (b bytea)")
        let bytes = (0...255).map { UInt8($0) } + [0, 0, 255]
        try connection.execute("insert into blobs values (\(bytes))")
        let row = try #require(try connection.query("select b, length(b) as n from blobs").first)
        #expect(try row["b", as: [UInt8].self] == bytes)
        #expect(try row["n", as: Int.self] == bytes.count)
        let empty: [UInt8] = []
        #expect(try connection.query("select \(empty) as e").first?["e", as: [UInt8].self] == [])
    }

    @Test("timestamps round-trip with microseconds and decode in any session time zone")
    func dates() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let date = Date(timeIntervalSince1970: 1_780_309_230.123456)
        let row = try #require(
            try connection.query(
                "select \(date)::timestamptz as t, \(date)::timestamptz = '2026-06-01 10:20:30.123456Z' as same"
            ).first)
        let back = try row["t", as: Date.self]
        #expect(abs(back.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_001)
        #expect(try row["same", as: Bool.self])
        // An ISO envelope timestamp is accepted as is by the server.
        #expect(
            try connection.query("select \("2026-06-01T10:20:30.123Z")::timestamptz as t").first?["t", as: Date.self]
                == Date(timeIntervalSince1970: 1_780_309_230.123))
        try connection.execute("set timezone to 'Asia/Kolkata'")
        let shifted = try connection.query("select '2026-06-01 10:20:30.5Z'::timestamptz as t, now()::text as n").first
        #expect(try shifted?["t", as: Date.self] == Date(timeIntervalSince1970: 1_780_309_230.5))
        let before1970 = Date(timeIntervalSince1970: -86_400 * 365.25 * 30 + 0.25)
        #expect(try connection.query("select \(before1970)::timestamptz as t").first?["t", as: Date.self] == before1970)
    }

    @Test("string and integer arrays bind as PostgreSQL arrays")
    func arrays() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let names = ["a", "b,c", "quote\"d", "back\\slash", "NULL", "", "{brace}", "ünï"]
        let ids: [Int64] = [1, -2, Int64.max]
        let row = try #require(
            try connection.query(
                "select \(names)::text[] as names, cardinality(\(names)::text[]) as n, \(ids)::bigint[] as ids"
            ).first)
        #expect(try row["names", as: [String].self] == names)
        #expect(try row["n", as: Int.self] == names.count)
        #expect(try row["ids", as: [Int64].self] == ids)
        let matched = try connection.query(
            "select x from unnest(array['a','z','b,c']) x where x = any(\(names)::text[]) order by x")
        #expect(try matched.map { try $0["x", as: String.self] } == ["a", "b,c"])
    }

    @Test("raw JSON binds into jsonb unchanged")
    func json() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let json = RawJSON(#"{"revenue":9.99,"currency":"EUR","tags":["a","☃"]}"#)
        let row = try #require(
            try connection.query(
                "select (\(json)::jsonb)->>'currency' as c, (\(json)::jsonb)->'tags'->>1 as tag"
            ).first)
        #expect(try row["c", as: String.self] == "EUR")
        #expect(try row["tag", as: String.self] == "☃")
    }

    @Test("fragments and identifiers compose into one statement with renumbered binds")
    func fragments() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table \(identifier: "odd \"name\"") (a int, b text)")
        try connection.execute("insert into \(identifier: "odd \"name\"") values (\(1), \("x")), (\(2), \("y"))")
        let filter: SQL = "and b = \("y")"
        var sql: SQL = "select a from \(identifier: "odd \"name\"") where a > \(0) \(fragment: filter)"
        #expect(sql.text.contains("$2"))
        #expect(try connection.query(sql).map { try $0["a", as: Int.self] } == [2])
        sql.append(" and a < \(10)")
        #expect(sql.binds.count == 3)
        #expect(try connection.query(sql).count == 1)
    }

    @Test("execute reports the number of affected rows")
    func affectedRows() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (a int)")
        #expect(try connection.execute("insert into t select generate_series(1, 5)") == 5)
        #expect(try connection.execute("update t set a = a + 1 where a > \(2)") == 3)
        #expect(try connection.execute("delete from t") == 5)
    }
}
