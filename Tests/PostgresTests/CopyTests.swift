import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct CopyTests {
    @Test("COPY in text format loads 100k rows with escaping and NULLs")
    func textFormat() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (id bigint, label text, payload jsonb, at timestamptz)")
        let when = Date(timeIntervalSince1970: 1_780_309_230.5)
        let count = 100_000
        let copied = try connection.copyIn("copy t (id, label, payload, at) from stdin") { buffer in
            for i in 0..<count {
                buffer.appendField(i)
                buffer.appendField(i % 10 == 0 ? nil : "tab\there\nnew\\line ☃ \(i)")
                buffer.appendField(bytes: Array(#"{"n":\#(i),"s":"a\tb"}"#.utf8))
                buffer.appendField(when)
                buffer.endRow()
            }
        }
        #expect(copied == count)
        let row = try #require(
            try connection.query(
                """
                select count(*) as n, count(label) as labels, sum(id) as total,
                       max(label) filter (where id = 7) as seven, min(at) as at,
                       max(payload->>'s') as s
                from t
                """
            ).first)
        #expect(try row["n", as: Int.self] == count)
        #expect(try row["labels", as: Int.self] == count - count / 10)
        #expect(try row["total", as: Int64.self] == Int64(count) * Int64(count - 1) / 2)
        #expect(try row["seven", as: String.self] == "tab\there\nnew\\line ☃ 7")
        #expect(try row["at", as: Date.self] == when)
        #expect(try row["s", as: String.self] == "a\tb")
    }

    @Test("COPY in CSV format loads quoted fields")
    func csvFormat() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (id int, label text)")
        let copied = try connection.copyIn("copy t from stdin with (format csv)") { buffer in
            buffer.append("1,plain\n")
            buffer.append("2,\"with, comma and \"\"quotes\"\"\"\n")
            buffer.append(Array("3,\"multi\nline\"\n4,\n".utf8))
        }
        #expect(copied == 4)
        let labels = try connection.query("select label from t order by id").map { try $0["label", as: String?.self] }
        #expect(labels == ["plain", "with, comma and \"quotes\"", "multi\nline", nil])
    }

    @Test("a bad row fails the whole COPY with the server's error and the connection stays usable")
    func badRow() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (id int, label text)")
        let error = #expect(throws: PostgresError.self) {
            try connection.copyIn("copy t from stdin") { buffer in
                for i in 0..<50_000 {
                    buffer.append(i == 20_000 ? "not-a-number\tx\n" : "\(i)\tok\n")
                }
            }
        }
        #expect(error?.sqlState == "22P02")
        #expect(try connection.query("select count(*) as n from t").first?["n", as: Int.self] == 0)
        #expect(connection.isHealthy())
        #expect(try connection.copyIn("copy t from stdin") { $0.append("1\tfine\n") } == 1)
    }

    @Test("a feed that throws aborts the COPY and rethrows its own error")
    func feedThrows() throws {
        struct Stop: Error {}
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (id int)")
        #expect(throws: Stop.self) {
            try connection.copyIn("copy t from stdin") { buffer in
                for i in 0..<100_000 { buffer.append("\(i)\n") }
                throw Stop()
            }
        }
        #expect(try connection.query("select count(*) as n from t").first?["n", as: Int.self] == 0)
        #expect(connection.isHealthy())
    }

    @Test("COPY inside a transaction rolls back with it")
    func insideTransaction() throws {
        struct Stop: Error {}
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create temp table t (id int)")
        #expect(throws: Stop.self) {
            try connection.withTransaction { tx in
                #expect(try tx.copyIn("copy t from stdin") { $0.append("1\n2\n") } == 2)
                throw Stop()
            }
        }
        #expect(try connection.query("select count(*) as n from t").first?["n", as: Int.self] == 0)
    }
}
