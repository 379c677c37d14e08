import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct TransactionTests {
    struct Boom: Error {}

    @Test("a transaction commits when its body returns and rolls back when it throws")
    func commitAndRollback() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (a int)")
        let value = try connection.withTransaction { tx in
            try tx.execute("insert into t values (1)")
            return 7
        }
        #expect(value == 7)
        #expect(throws: Boom.self) {
            try connection.withTransaction { tx in
                try tx.execute("insert into t values (2)")
                throw Boom()
            }
        }
        #expect(!connection.isInTransaction)
        #expect(try connection.query("select a from t").map { try $0["a", as: Int.self] } == [1])
    }

    @Test("nested transactions are savepoints: an inner failure keeps the outer work")
    func nested() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (a int)")
        try connection.withTransaction { tx in
            try tx.execute("insert into t values (1)")
            #expect(throws: Boom.self) {
                try tx.withTransaction { inner in
                    try inner.execute("insert into t values (2)")
                    throw Boom()
                }
            }
            try tx.withTransaction { inner in try inner.execute("insert into t values (3)") }
        }
        #expect(try connection.query("select a from t order by a").map { try $0["a", as: Int.self] } == [1, 3])
    }

    @Test("a swallowed server error makes the commit fail instead of silently rolling back")
    func swallowedError() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        try connection.execute("create table t (a int primary key)")
        let error = #expect(throws: PostgresError.self) {
            try connection.withTransaction { tx in
                try tx.execute("insert into t values (1)")
                _ = try? tx.execute("insert into t values (1)")
            }
        }
        #expect(error?.sqlState == "25P02")
        #expect(try connection.query("select count(*) as n from t").first?["n", as: Int.self] == 0)
        #expect(!connection.isInTransaction)
    }

    @Test("advisory locks exclude a second session until released")
    func advisoryLocks() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let first = try db.connect()
        defer { first.close() }
        let second = try db.connect()
        defer { second.close() }
        let key = Connection.advisoryKey("test.lock." + db.schema)
        #expect(key == Connection.advisoryKey("test.lock." + db.schema))
        #expect(try first.tryAdvisoryLock(key: key))
        #expect(try !second.tryAdvisoryLock(key: key))
        #expect(try first.advisoryUnlock(key: key))
        #expect(try second.tryAdvisoryLock(key: key))
        try second.advisoryUnlock(key: key)

        try first.withTransaction { tx throws in
            #expect(try tx.tryAdvisoryTransactionLock(key: key))
            #expect(try !second.tryAdvisoryLock(key: key))
        }
        // Released at commit.
        #expect(try second.tryAdvisoryLock(key: key))
        try second.withTransaction { _ in }
        try first.withTransaction { tx throws in #expect(try !tx.tryAdvisoryTransactionLock(key: key)) }
    }
}
