import Foundation
import Locking
import Postgres
import TestSupport
import Testing

@Suite struct MigratorTests {
    let sqlDirectory = RepositoryRoot.path + "/sql"

    @Test("migrating twice applies every file once; the second run is a no-op")
    func twice() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let migrator = Migrator(directory: sqlDirectory)
        let files = try migrator.migrations().map(\.name)
        #expect(files.first == "001_core")
        #expect(try migrator.migrate(connection) == files)
        #expect(try migrator.migrate(connection) == [])
        let recorded = try connection.query("select name, checksum from schema_migrations order by version")
        #expect(try recorded.map { try $0["name", as: String.self] } == files)
        #expect(try recorded.allSatisfy { try $0["checksum", as: String.self].count == 64 })
        // Everything landed in the test's schema, nothing in public.
        let tables = try connection.query(
            "select count(*) as n from pg_tables where schemaname = \(db.schema) and tablename = 'events_default'")
        #expect(try tables.first?["n", as: Int.self] == 1)
        let role = try connection.query("select rolcanlogin from pg_roles where rolname = 'detour_analyst'")
        #expect(try role.first?["rolcanlogin", as: Bool.self] == false)
    }

    @Test("two migrators at once both succeed and apply each file exactly once")
    func concurrent() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let migrator = Migrator(directory: sqlDirectory)
        let outcomes = Locked<[Result<[String], PostgresError>]>([])
        let url = db.url
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let result = Result { () throws(PostgresError) -> [String] in
                let connection = try Connection(url: url)
                defer { connection.close() }
                return try migrator.migrate(connection)
            }
            outcomes.withLock { $0.append(result) }
        }
        let results = outcomes.withLock { $0 }
        #expect(results.count == 2)
        var applied: [String] = []
        for result in results {
            switch result {
            case .success(let names): applied += names
            case .failure(let error): Issue.record("migrator failed: \(error)")
            }
        }
        #expect(applied.sorted() == (try migrator.migrations().map(\.name)).sorted())
        let connection = try db.connect()
        defer { connection.close() }
        #expect(
            try connection.query("select count(*) as n from schema_migrations").first?["n", as: Int.self]
                == applied.count)
    }

    @Test("migrations recorded by a newer binary, with no file here, are named; applying still succeeds")
    func newerDatabase() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        let migrator = Migrator(directory: sqlDirectory)
        #expect(try migrator.appliedWithoutFile(connection) == ([], []))  // no schema_migrations yet
        try migrator.migrate(connection)
        #expect(try migrator.appliedWithoutFile(connection) == ([], []))
        try connection.execute(
            "insert into schema_migrations (version, name, checksum) values (998, '998_from_the_future', 'x')")
        #expect(try migrator.migrate(connection) == [])
        #expect(try migrator.appliedWithoutFile(connection) == (["998_from_the_future"], []))

        // A directory that is not this binary's (a wrong --sql-dir holding only the first file): the
        // applied migrations above it are not "from a newer binary", except the one above them all.
        let partial = NSTemporaryDirectory() + "detour-partial-sql-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: partial) }
        let files = try FileManager.default.contentsOfDirectory(atPath: sqlDirectory).filter { $0.hasSuffix(".sql") }
        let newest = try #require(files.sorted().last)
        try FileManager.default.copyItem(atPath: sqlDirectory + "/" + newest, toPath: partial + "/" + newest)
        let (newer, missing) = try Migrator(directory: partial).appliedWithoutFile(connection)
        #expect(newer == ["998_from_the_future"])
        #expect(missing.count == files.count - 1, "\(missing)")
    }

    @Test("an applied migration whose file changed is refused")
    func checksumChanged() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let directory = try makeTemporaryCopy(of: sqlDirectory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let connection = try db.connect()
        defer { connection.close() }
        let migrator = Migrator(directory: directory)
        try migrator.migrate(connection)
        let file = directory + "/001_core.sql"
        let original = try String(contentsOfFile: file, encoding: .utf8)
        try (original + "\n-- edited after release\n").write(toFile: file, atomically: true, encoding: .utf8)
        let error = #expect(throws: PostgresError.self) { try migrator.migrate(connection) }
        guard case .migration(let message) = error else {
            Issue.record("expected a migration error")
            return
        }
        #expect(message.contains("001_core"))
        #expect(message.contains("checksum"))
    }

    @Test("a failing migration is rolled back and earlier ones stay applied")
    func failingMigration() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let directory = try makeTemporaryCopy(of: sqlDirectory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "create table half_done (a int);\nselect no_such_function();\n"
            .write(toFile: directory + "/900_broken.sql", atomically: true, encoding: .utf8)
        let connection = try db.connect()
        defer { connection.close() }
        let error = #expect(throws: PostgresError.self) { try Migrator(directory: directory).migrate(connection) }
        #expect(error?.sqlState == "42883")
        let names = try connection.query("select name from schema_migrations").map { try $0["name", as: String.self] }
        #expect(names.contains("001_core"))
        #expect(!names.contains("900_broken"))
        #expect(
            try connection.query("select to_regclass('half_done') is null as gone").first?["gone", as: Bool.self]
                == true)
    }

    @Test("badly named or duplicate migration files are refused before anything runs")
    func badNames() throws {
        let directory = try makeTemporaryCopy(of: sqlDirectory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "select 1;".write(toFile: directory + "/001_again.sql", atomically: true, encoding: .utf8)
        #expect(throws: PostgresError.self) { try Migrator(directory: directory).migrations() }
        #expect(throws: PostgresError.self) { try Migrator(directory: "/nonexistent/sql").migrations() }
    }

    @Test("a directory without migration files is refused, not reported as an up-to-date schema")
    func emptyDirectory() throws {
        let directory = NSTemporaryDirectory() + "migrations-empty-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "not a migration".write(toFile: directory + "/README.md", atomically: true, encoding: .utf8)
        let error = #expect(throws: PostgresError.self) { try Migrator(directory: directory).migrations() }
        #expect("\(error!)".contains("no migration files (NNN_name.sql) in \(directory)"))
    }

    @Test(
        "a migration waits for a lock at most its lock timeout: rolled back and tried again, it applies once the lock is free, and fails with 55P03 when it never is"
    )
    func lockTimeout() throws {
        let db = try TestDatabase.make()
        defer { db.drop() }
        let directory = try makeTemporaryCopy(of: sqlDirectory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "ALTER TABLE apps ADD COLUMN lock_probe integer;\n".write(
            toFile: directory + "/999_lock_probe.sql", atomically: true, encoding: .utf8)
        // A reader in an open transaction (an analyst's long query) holds ACCESS SHARE on apps.
        let holder = try db.connect()
        defer { holder.close() }
        try holder.unsafeSQL("BEGIN")
        _ = try holder.query("select count(*) as n from apps")
        // Without the policy a migrate would wait for the holder forever: this ends it as a failure.
        let connection = try db.connect()
        defer { connection.close() }
        try connection.unsafeSQL("SET statement_timeout = '60s'")
        func probeColumns() throws -> Int {
            try connection.query(
                "select count(*) as n from information_schema.columns where table_schema = \(db.schema) and column_name = 'lock_probe'"
            ).first?["n", as: Int.self] ?? -1
        }

        // Never free: every attempt times out, and nothing of the migration stays.
        let retried = Locked<[Int]>([])
        let refusing = Migrator(
            directory: directory, lockPolicy: .init(timeout: .milliseconds(50), attempts: 3, pause: .milliseconds(10))
        ) { name, attempt in retried.withLock { $0.append(attempt) } }
        let error = #expect(throws: PostgresError.self) { try refusing.migrate(connection) }
        #expect(error?.sqlState == "55P03")
        #expect("\(error.map { "\($0)" } ?? "")".contains("migration 999_lock_probe could not take its locks"))
        #expect(retried.withLock { $0 } == [1, 2])
        #expect(try probeColumns() == 0)
        #expect(
            try connection.query("select count(*) as n from schema_migrations where version = 999").first?[
                "n", as: Int.self] == 0)

        // Freed after the first timeout: the next attempt applies it.
        let firstRetry = DispatchSemaphore(value: 0)
        let waiting = Migrator(
            directory: directory,
            lockPolicy: .init(timeout: .milliseconds(50), attempts: 2000, pause: .milliseconds(10))
        ) { _, attempt in if attempt == 1 { firstRetry.signal() } }
        let outcome = Locked<Result<[String], PostgresError>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let url = db.url
        Thread.detachNewThread {
            let result = Result { () throws(PostgresError) -> [String] in
                let connection = try Connection(url: url)
                defer { connection.close() }
                return try waiting.migrate(connection)
            }
            outcome.withLock { $0 = result }
            finished.signal()
        }
        #expect(firstRetry.wait(timeout: .now() + 60) == .success)
        try holder.unsafeSQL("COMMIT")
        #expect(finished.wait(timeout: .now() + 300) == .success)
        switch outcome.withLock({ $0 }) {
        case .success(let applied): #expect(applied == ["999_lock_probe"])
        case .failure(let error): Issue.record("migrate failed: \(error)")
        case nil: Issue.record("migrate did not finish")
        }
        #expect(try probeColumns() == 1)
    }

    private func makeTemporaryCopy(of directory: String) throws -> String {
        let target = NSTemporaryDirectory() + "migrations-" + UUID().uuidString
        try FileManager.default.copyItem(atPath: directory, toPath: target)
        return target
    }
}

@Suite struct MigrationDirectoryTests {
    @Test("the migrations directory is found from a binary inside the checkout, or taken as given")
    func findDirectory() {
        let fromBuild = Migrator.findDirectory(
            explicit: nil, executablePath: RepositoryRoot.path + "/.build/debug/detour-analytics")
        #expect(fromBuild == RepositoryRoot.path + "/sql")
        #expect(Migrator.findDirectory(explicit: "/opt/x/sql", executablePath: "/usr/bin/x") == "/opt/x/sql")
        #expect(Migrator.findDirectory(explicit: nil, executablePath: "/nonexistent/bin/detour-analytics") == nil)
    }
}
