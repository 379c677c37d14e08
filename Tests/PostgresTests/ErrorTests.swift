import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct ErrorTests {
    @Test("a unique violation carries SQLSTATE 23505 and the server's detail")
    func uniqueViolation() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (id text primary key)")
        try connection.execute("insert into t values (\("secret-value"))")
        let error = #expect(throws: PostgresError.self) {
            try connection.execute("insert into t values (\("secret-value"))")
        }
        #expect(error?.sqlState == "23505")
        #expect(error?.isUniqueViolation == true)
        guard case .server(_, let message, let detail, _, let query) = error else {
            Issue.record("expected a server error")
            return
        }
        #expect(message.contains("t_pkey"))
        #expect(detail?.contains("already exists") == true)
        #expect(query == "insert into t values ($1)")
        // Bind values never appear in either rendering; query text only in debugDescription.
        #expect(!String(describing: error!).contains("insert into"))
        #expect(String(reflecting: error!).contains("insert into t values ($1)"))
        #expect(!String(reflecting: error!).contains("secret-value") || detail?.contains("secret-value") == true)
        // The connection stays usable.
        #expect(try connection.query("select 1 as one").first?["one", as: Int.self] == 1)
    }

    @Test("a syntax error carries SQLSTATE 42601")
    func syntaxError() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let error = #expect(throws: PostgresError.self) { try connection.query("selec 1") }
        #expect(error?.sqlState == "42601")
        let multi = #expect(throws: PostgresError.self) { try connection.unsafeSQL("select 1; selec 2") }
        #expect(multi?.sqlState == "42601")
    }

    @Test("decoding errors name the column and the type, never the value")
    func decodingErrors() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let row = try #require(try connection.query("select 'private-text' as word, null::int as nothing").first)
        let notInt = #expect(throws: PostgresError.self) { try row["word", as: Int.self] }
        guard case .decoding(let column, let message) = notInt else {
            Issue.record("expected a decoding error")
            return
        }
        #expect(column == "word")
        #expect(message.contains("Int"))
        #expect(!String(describing: notInt!).contains("private-text"))
        let null = #expect(throws: PostgresError.self) { try row["nothing", as: Int.self] }
        #expect(String(describing: null!).contains("NULL"))
        #expect(throws: PostgresError.self) { try row["missing", as: String.self] }
        #expect(throws: PostgresError.self) { try row[5, as: String.self] }
        #expect(try row[0, as: String.self] == "private-text")
    }

    @Test("a refused connection explains itself without leaking the password")
    func connectionFailure() throws {
        // Port 1 on loopback: nothing listens there.
        let error = #expect(throws: PostgresError.self) {
            try Connection(url: "postgresql://someone:hunter2pw@127.0.0.1:1/detour?connect_timeout=5")
        }
        guard case .connection(let message) = error else {
            Issue.record("expected a connection error")
            return
        }
        #expect(message.contains("127.0.0.1"))
        #expect(message.lowercased().contains("refused"))
        #expect(!String(describing: error!).contains("hunter2pw"))
        #expect(error?.isConnectionLoss == true)
        #expect(throws: PostgresError.self) { try Connection(url: "not a valid = = connection string") }
    }

    @Test("a closed connection refuses work and reports unhealthy; a live one reports healthy")
    func closedAndHealth() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        #expect(connection.isHealthy())
        #expect(connection.serverVersion >= 150000)
        try connection.reconnect()
        #expect(connection.isHealthy())
        connection.close()
        connection.close()
        #expect(!connection.isHealthy())
        #expect(throws: PostgresError.self) { try connection.query("select 1") }
    }

    @Test("a connection whose backend was terminated reports unhealthy and reconnects")
    func reconnectAfterTermination() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let victim = try db.connect()
        defer { victim.close() }
        let killer = try db.connect()
        defer { killer.close() }
        let pid = try #require(try victim.query("select pg_backend_pid() as p").first?["p", as: Int.self])
        #expect(try killer.query("select pg_terminate_backend(\(pid)::int) as ok").first?["ok", as: Bool.self] == true)
        // Termination is asynchronous: wait (bounded) until the backend is gone.
        for _ in 0..<100 {
            let alive = try killer.query("select count(*) as n from pg_stat_activity where pid = \(pid)::int")
            if try alive.first?["n", as: Int.self] == 0 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let error = #expect(throws: PostgresError.self) { try victim.query("select 1") }
        #expect(error?.isConnectionLoss == true)
        // One line, for a log line or the one line a command prints: libpq's message for this is
        // three ("server closed the connection unexpectedly\n\tThis probably means ...").
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("closed the connection") || text.contains("terminat"), "\(text)")
        #expect(!text.contains("\n") && !text.contains("\t"), "\(text)")
        #expect(!victim.isHealthy())
        try victim.reconnect()
        #expect(victim.isHealthy())
        #expect(try victim.query("select current_schema() as s").first?["s", as: String.self] == db.schema)
    }
}
