import Foundation

/// Applies the numbered migration files of a directory (`001_core.sql`, `002_reports.sql`, ...).
///
/// Rules:
/// - A file is named `NNN_name.sql`; it is applied once, in version order, inside its own
///   transaction, and recorded in `schema_migrations(version, name, checksum, applied_at)`.
/// - Files must not contain transaction control (`BEGIN`/`COMMIT`) and must not qualify names with
///   a schema: everything lands in the first schema of the connection's `search_path`, so tests
///   can run each in its own schema.
/// - Safe from several processes at once: the migrator holds a session advisory lock (keyed by
///   the current schema) for the whole run; the second process waits, then finds nothing to do.
/// - An applied file whose SHA-256 changed is refused: fix forward with a new file instead.
package struct Migrator: Sendable {
    /// One migration file.
    package struct Migration: Sendable, Equatable {
        /// The number before the first `_`.
        package var version: Int
        /// The file name without `.sql`, e.g. `001_core`.
        package var name: String
        /// The SQL text.
        package var sql: String
    }

    /// How a migration waits for the locks its statements take (`ALTER TABLE` and friends take
    /// `ACCESS EXCLUSIVE`).
    ///
    /// On a live database a migration that waits for a lock behind a long query (an analyst's
    /// report, an aggregator cycle catching up) is itself a queue head: every later query on that
    /// table, reads included, waits behind it, so the reports and loads stand still for as long as
    /// that query runs. With a policy each statement waits at most `timeout` (`lock_timeout`, set
    /// for the migration's transaction only); on a timeout the migration is rolled back and tried
    /// again after a pause that doubles from `pause`, `attempts` times in all. The queue it held
    /// drains at once, so the pipeline sees pauses of `timeout` at most.
    package struct LockPolicy: Sendable, Equatable {
        /// The longest one statement waits for one lock.
        package var timeout: Duration
        /// How many times a migration is tried before its lock timeout is thrown.
        package var attempts: Int
        /// The pause before the second attempt; each later pause doubles, up to 30 s.
        package var pause: Duration

        package init(timeout: Duration, attempts: Int, pause: Duration = .seconds(1)) {
            self.timeout = timeout
            self.attempts = max(1, attempts)
            self.pause = pause
        }
    }

    /// The directory holding the `.sql` files.
    package let directory: String
    /// How each migration waits for locks; nil waits without limit (PostgreSQL's default).
    package let lockPolicy: LockPolicy?
    /// Called with the migration's name and the attempt that failed, before the pause, each time a
    /// migration is rolled back for a lock timeout and will be tried again.
    package let onLockRetry: (@Sendable (_ migration: String, _ attempt: Int) -> Void)?

    /// Creates a migrator for a directory such as `<repo>/sql` or `/usr/share/detour-analytics/sql`.
    package init(
        directory: String, lockPolicy: LockPolicy? = nil,
        onLockRetry: (@Sendable (_ migration: String, _ attempt: Int) -> Void)? = nil
    ) {
        self.directory = directory
        self.lockPolicy = lockPolicy
        self.onLockRetry = onLockRetry
    }

    /// Finds the migrations directory at run time.
    ///
    /// Tries, in order: `explicit` (a `--sql-dir` flag; returned as is when given), then
    /// `<prefix>/share/detour-analytics/sql` next to an installed binary (`<prefix>/bin/...`),
    /// `/usr/share/detour-analytics/sql`, and finally the `sql/` of a source checkout above the
    /// executable (running from `.build/debug`). A candidate counts when it holds a `.sql` file.
    ///
    /// - Parameters:
    ///   - explicit: a directory the user named, if any.
    ///   - executablePath: the running binary, e.g. `CommandLine.arguments[0]` resolved.
    /// - Returns: the directory, or nil when none was found.
    package static func findDirectory(explicit: String?, executablePath: String) -> String? {
        if let explicit { return explicit }
        let fm = FileManager.default
        let executable = URL(fileURLWithPath: executablePath).resolvingSymlinksInPath()
        var candidates: [String] = []
        let binDirectory = executable.deletingLastPathComponent()
        candidates.append(
            binDirectory.deletingLastPathComponent().appendingPathComponent("share/detour-analytics/sql").path)
        candidates.append("/usr/share/detour-analytics/sql")
        var directory = binDirectory
        for _ in 0..<8 where directory.path != "/" {
            if fm.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                candidates.append(directory.appendingPathComponent("sql").path)
                break
            }
            directory = directory.deletingLastPathComponent()
        }
        return candidates.first { candidate in
            ((try? fm.contentsOfDirectory(atPath: candidate)) ?? []).contains { $0.hasSuffix(".sql") }
        }
    }

    /// The migration files in version order.
    ///
    /// - Throws: `PostgresError.migration` if the directory cannot be read or holds no migration,
    ///   a name is malformed, or two files share a version.
    package func migrations() throws(PostgresError) -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw .migration(message: "cannot read the migrations directory \(directory)")
        }
        var result: [Migration] = []
        for file in names where file.hasSuffix(".sql") {
            let name = String(file.dropLast(4))
            guard let prefix = name.split(separator: "_").first, let version = Int(prefix), prefix.count >= 3 else {
                throw .migration(message: "migration file \(file) is not named NNN_name.sql")
            }
            guard let data = FileManager.default.contents(atPath: directory + "/" + file),
                let sql = String(data: data, encoding: .utf8)
            else { throw .migration(message: "cannot read migration file \(file)") }
            if let clash = result.first(where: { $0.version == version }) {
                throw .migration(message: "migrations \(clash.name) and \(name) share version \(version)")
            }
            result.append(Migration(version: version, name: name, sql: sql))
        }
        // A wrong directory (DETOUR_SQL_DIR one level off, say) said "schema is up to date" and
        // exited 0, and the pipeline then failed every load cycle on a missing table.
        guard !result.isEmpty else {
            throw .migration(
                message: "no migration files (NNN_name.sql) in \(directory); is it this binary's sql directory "
                    + "(--sql-dir, DETOUR_SQL_DIR)?")
        }
        return result.sorted { $0.version < $1.version }
    }

    /// Applies every migration not yet recorded, each in its own transaction.
    ///
    /// - Returns: the names of the migrations applied by this call (empty when up to date).
    /// - Throws: `PostgresError.migration` for a changed checksum or unreadable files,
    ///   `PostgresError.server` when a file fails (that file is rolled back, earlier ones stay).
    @discardableResult
    package func migrate(_ connection: Connection) throws(PostgresError) -> [String] {
        let files = try migrations()
        let schema = try connection.query("select current_schema() as s").first?["s", as: String?.self] ?? nil
        guard let schema else {
            throw .migration(message: "no schema in search_path to migrate (current_schema() is NULL)")
        }
        let key = Connection.advisoryKey("detour-analytics.migrate." + schema)
        try connection.advisoryLock(key: key)
        defer { _ = try? connection.advisoryUnlock(key: key) }

        try connection.unsafeSQL(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        var applied: [Int: (name: String, checksum: String)] = [:]
        for row in try connection.query("select version, name, checksum from schema_migrations") {
            applied[try row["version", as: Int.self]] =
                (try row["name", as: String.self], try row["checksum", as: String.self])
        }
        var done: [String] = []
        for file in files {
            let checksum = try checksum(of: file.sql, connection)
            if let existing = applied[file.version] {
                guard existing.checksum == checksum else {
                    throw .migration(
                        message: "migration \(file.name) was changed after it was applied (checksum differs); "
                            + "add a new migration instead of editing an applied one")
                }
                continue
            }
            try apply(file, checksum: checksum, connection)
            done.append(file.name)
        }
        return done
    }

    /// Applies one migration in its own transaction and records it, under `lockPolicy`.
    ///
    /// - Throws: `PostgresError.server` with SQLSTATE `55P03` (lock not available) when every
    ///   attempt timed out waiting for a lock, its message naming the migration and the wait.
    private func apply(_ file: Migration, checksum: String, _ connection: Connection) throws(PostgresError) {
        var attempt = 1
        var pause = lockPolicy?.pause ?? .zero
        while true {
            do {
                try connection.withTransaction { connection in
                    if let lockPolicy {
                        let milliseconds = max(1, lockPolicy.timeout.milliseconds)
                        try connection.unsafeSQL("SET LOCAL lock_timeout = \(milliseconds)")
                    }
                    try connection.unsafeSQL(file.sql)
                    try connection.execute(
                        "insert into schema_migrations (version, name, checksum) values (\(file.version), \(file.name), \(checksum))"
                    )
                }
                return
            } catch let error as PostgresError {
                guard let lockPolicy, error.sqlState == Self.lockNotAvailable else { throw error }
                guard attempt < lockPolicy.attempts else {
                    throw .server(
                        sqlState: Self.lockNotAvailable,
                        message:
                            "migration \(file.name) could not take its locks: each of \(attempt) attempts waited "
                            + "\(lockPolicy.timeout.milliseconds) ms for a lock held by another session",
                        detail: "\(error)",
                        hint:
                            "a long query or an open transaction holds a table this migration changes (see pg_stat_activity "
                            + "and pg_locks); run migrate again once it ends, or with a longer --lock-timeout "
                            + "(0 waits as long as it takes, and holds every later query on that table meanwhile)",
                        query: nil)
                }
                onLockRetry?(file.name, attempt)
                Thread.sleep(forTimeInterval: pause.seconds)
                pause = min(pause * 2, .seconds(30))
                attempt += 1
            } catch {
                throw .migration(message: "\(file.name): \(error)")
            }
        }
    }

    /// SQLSTATE lock_not_available: what a statement past its `lock_timeout` fails with.
    static let lockNotAvailable = "55P03"

    /// The migrations recorded in `schema_migrations` that have no file in the directory, in two
    /// kinds: `newer`, above the highest file here (the database was migrated by a newer
    /// detour-analytics: an image rolled back, an old binary left on a cron host; this binary's code
    /// may not match that schema), and `missing`, below it (the directory is not this binary's:
    /// a wrong `--sql-dir`, or files deleted). Names as recorded (`065_name`), in version order;
    /// both empty when the table is missing or every applied version has a file.
    /// - Throws: `PostgresError` when the directory or the table cannot be read.
    package func appliedWithoutFile(_ connection: Connection) throws(PostgresError) -> (
        newer: [String], missing: [String]
    ) {
        let known = Set(try migrations().map(\.version))
        let highest = known.max() ?? 0
        let present = try connection.query("select to_regclass('schema_migrations') is not null as present")
        guard try present.first?["present", as: Bool.self] == true else { return ([], []) }
        var newer: [String] = []
        var missing: [String] = []
        for row in try connection.query("select version, name from schema_migrations order by version") {
            let version = try row["version", as: Int.self]
            guard !known.contains(version) else { continue }
            if version > highest {
                newer.append(try row["name", as: String.self])
            } else {
                missing.append(try row["name", as: String.self])
            }
        }
        return (newer, missing)
    }

    /// SHA-256 of the file text, computed by the server (hex).
    private func checksum(of sql: String, _ connection: Connection) throws(PostgresError) -> String {
        try connection.query("select encode(sha256(convert_to(\(sql), 'UTF8')), 'hex') as c").first?[
            "c", as: String.self]
            ?? ""
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    fileprivate var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }

    /// Seconds as a `Double`.
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
