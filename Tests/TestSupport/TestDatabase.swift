import Foundation
package import Postgres

/// A fresh PostgreSQL schema for one test, with the project's migrations applied.
///
/// The database comes from `DETOUR_TEST_DATABASE_URL` (set by `scripts/test`). Every connection
/// made from `url` has `search_path` set to the test's own schema, so tests run in parallel
/// without seeing each other's rows. Call `drop()` at the end (a `defer` right after `make()`).
///
/// ```swift
/// let db = try TestDatabase.make()
/// defer { db.drop() }
/// let connection = try db.connect()
/// ```
package struct TestDatabase: Sendable {
    /// The schema this test owns, e.g. `test_3f9a0c1d2e4b5a69`.
    package let schema: String
    /// A connection string whose connections use `schema` (via libpq's `options=-csearch_path=`).
    package let url: String
    /// The database URL from the environment, without the schema option.
    package let baseURL: String

    /// Creates a unique schema and applies the migrations from `<repo>/sql`.
    ///
    /// - Parameter migrate: false to leave the schema empty (migration tests apply their own).
    /// - Throws: `TestDatabaseError.notConfigured` when `DETOUR_TEST_DATABASE_URL` is unset, or the
    ///   error from connecting or migrating.
    package static func make(migrate: Bool = true) throws -> TestDatabase {
        guard let base = ProcessInfo.processInfo.environment["DETOUR_TEST_DATABASE_URL"], !base.isEmpty else {
            throw TestDatabaseError.notConfigured
        }
        var random = SystemRandomNumberGenerator()
        let schema = "test_" + String(random.next() as UInt64, radix: 16)
        let admin = try Connection(url: base)
        defer { admin.close() }
        try admin.execute("create schema \(identifier: schema)")
        let database = TestDatabase(schema: schema, url: Connection.withSearchPath(base, schema: schema), baseURL: base)
        if migrate {
            let connection = try database.connect()
            defer { connection.close() }
            try Migrator(directory: RepositoryRoot.path + "/sql").migrate(connection)
        }
        return database
    }

    /// Opens a connection whose `search_path` is this test's schema.
    package func connect() throws(PostgresError) -> Connection {
        try Connection(url: url)
    }

    /// Drops the schema and everything in it; failures are ignored (the test already has its result).
    package func drop() {
        guard let admin = try? Connection(url: baseURL) else { return }
        defer { admin.close() }
        _ = try? admin.execute("drop schema if exists \(identifier: schema) cascade")
    }
}

/// Why a test database could not be made.
package enum TestDatabaseError: Error, CustomStringConvertible {
    /// `DETOUR_TEST_DATABASE_URL` is not set.
    case notConfigured

    package var description: String {
        switch self {
        case .notConfigured:
            return "DETOUR_TEST_DATABASE_URL is not set: run the tests with scripts/test, or export "
                + "DETOUR_TEST_DATABASE_URL=postgresql://user@127.0.0.1:PORT/detour (a database the tests may "
                + "create schemas in)"
        }
    }
}
