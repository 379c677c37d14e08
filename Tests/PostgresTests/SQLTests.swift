import Foundation
import Testing

@testable import Postgres

@Suite struct SQLTests {
    @Test("interpolated values become numbered binds and never enter the text")
    func binds() {
        let name = "x'); drop table apps; --"
        let sql: SQL = "select * from apps where name = \(name) and n > \(3) and flag = \(true)"
        #expect(sql.text == "select * from apps where name = $1 and n > $2 and flag = $3")
        #expect(sql.binds == [name, "3", "true"])
        #expect(sql.description == sql.text)
    }

    @Test("fragments renumber their placeholders but leave quoted text alone")
    func renumbering() {
        var sql: SQL = "select \(1)"
        sql.append(" where a = \(2) and b = '$1' and \"c$1\" = \(3)")
        #expect(sql.text == "select $1 where a = $2 and b = '$1' and \"c$1\" = $3")
        #expect(sql.binds == ["1", "2", "3"])
    }

    @Test("identifiers are quoted and escaped")
    func identifiers() {
        #expect(SQL.quoteIdentifier("events") == "\"events\"")
        #expect(SQL.quoteIdentifier("a\"b") == "\"a\"\"b\"")
        // A quote a combining mark follows is one Character with it, and was left undoubled.
        #expect(Array(SQL.quoteIdentifier("x\"\u{301}) OR true --").utf8) == Array("\"x\"\"\u{301}) OR true --\"".utf8))
    }

    @Test(
        "timestamps parse from every DateStyle ISO shape",
        arguments: [
            ("2026-06-01 10:20:30+00", 1_780_309_230_000_000 as Int64),
            ("2026-06-01 10:20:30.5+00", 1_780_309_230_500_000),
            ("2026-06-01 10:20:30.123456+00", 1_780_309_230_123_456),
            ("2026-06-01 15:50:30.123456+05:30", 1_780_309_230_123_456),
            ("2026-06-01 05:20:30-05", 1_780_309_230_000_000),
            ("2026-06-01T10:20:30.123Z", 1_780_309_230_123_000),
            ("2026-06-01 10:20:30", 1_780_309_230_000_000),
            ("1969-12-31 23:59:59.999999+00", -1),
        ])
    func parseTimestamps(text: String, micros: Int64) {
        #expect(PostgresTimestamp.parseMicroseconds(text) == micros)
    }

    @Test(
        "malformed or unsupported timestamps are refused",
        arguments: ["infinity", "2026-13-01 00:00:00+00", "2026-06-01", "0044-03-15 12:00:00+00 BC", ""])
    func refuseTimestamps(text: String) {
        #expect(PostgresTimestamp.parseMicroseconds(text) == nil)
    }

    @Test(
        "timestamps format as UTC with microseconds and parse back",
        arguments: [0, -1, 1_780_309_230_123_456, 253_402_300_799_999_999] as [Int64])
    func formatTimestamps(micros: Int64) {
        let text = PostgresTimestamp.format(microseconds: micros)
        #expect(text.hasSuffix("+00"))
        #expect(PostgresTimestamp.parseMicroseconds(text) == micros)
    }

    @Test("array literals parse with quotes, escapes and NULL")
    func arrays() {
        #expect(PostgresArrayParser.parse("{}") == [])
        #expect(PostgresArrayParser.parse(#"{a,"b c","d\"e",NULL,"NULL"}"#) == ["a", "b c", "d\"e", nil, "NULL"])
        #expect(PostgresArrayParser.parse("{{1,2},{3,4}}") == nil)
        #expect(UInt8.decodeArray("\\x00ff10") == [0, 255, 16])
        #expect(UInt8.decodeArray("\\x0") == nil)
        #expect(UInt8.encodeArray([0, 255]) == "\\x00ff")
    }
}
