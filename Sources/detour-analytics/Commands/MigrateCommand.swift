import Foundation
import Postgres

/// `detour-analytics migrate`: applies the numbered SQL files under `sql/`.
enum MigrateCommand: Command {
    static let name = "migrate"
    static let summary = "apply database migrations (idempotent, safe from two processes at once)"
    static let help = """
        Usage: detour-analytics migrate [--database-url URL] [--sql-dir DIR] [--lock-timeout DURATION]
                                        [--lock-attempts N]

        Applies sql/NNN_name.sql files that are not yet recorded in schema_migrations, in order, each in
        its own transaction, under an advisory lock so two processes at once apply each file once.

        On a live database a migration waits for its table locks at most --lock-timeout per lock: waiting
        longer behind a long query would hold every later query on that table (the reports, the loads)
        behind it. On a timeout the migration is rolled back and tried again after 1 s, then 2 s, 4 s, ...
        (a line on standard error each time), --lock-attempts times in all.

        Options:
        \(databaseHelp)
          --sql-dir DIR        directory of migration files (env DETOUR_SQL_DIR; default: the sql/ folder
                               found beside the binary or in the source tree around it, else ./sql in the working
                               directory, else /usr/share/detour-analytics/sql)
          --lock-timeout D     longest wait for one lock (env DETOUR_MIGRATE_LOCK_TIMEOUT; default 5s; 0 waits
                               as long as it takes)
          --lock-attempts N    tries per migration when its locks time out (default 5, 1...100)

        Exit status: 0 done (also when the schema was up to date), 64 bad usage, 69 database unavailable
        (unreachable, wrong password, shutting down, out of resources, a lock held by another session through
        every attempt), 1 migration files wrong (none in the
        directory, one changed after it was applied, one the server refuses: a syntax error, a missing privilege).
        """

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let url = try arguments.databaseURL(environment)
        let directory = try sqlDirectory(&arguments, environment)
        let lockPolicy = try self.lockPolicy(&arguments, environment)
        try arguments.finish()
        let address = try requireDatabase(url)
        return try unavailableOnDatabaseFailure(statementsAreOurs: true) {
            try migrate(url: address, directory: directory, lockPolicy: lockPolicy)
        }
    }

    /// `--lock-timeout` (else `DETOUR_MIGRATE_LOCK_TIMEOUT`, else 5 s; 0 for none) and
    /// `--lock-attempts`.
    private static func lockPolicy(_ arguments: inout Arguments, _ environment: Environment) throws
        -> Migrator.LockPolicy?
    {
        let (text, source) = try arguments.option(
            "--lock-timeout", orEnvironment: "DETOUR_MIGRATE_LOCK_TIMEOUT", environment)
        let timeout = try text.map { try parseDuration($0, flag: source) } ?? .seconds(5)
        let attempts = try arguments.integer("--lock-attempts", default: 5, in: 1...100)
        guard timeout > .zero else { return nil }
        // PostgreSQL's lock_timeout is an int of milliseconds (about 24.8 days at most).
        guard timeout >= .milliseconds(1), timeout <= .seconds(24 * 86_400) else {
            throw UsageError(description: "\(source) must be 0 or from 1ms to 24d, got \(text ?? "")")
        }
        return Migrator.LockPolicy(timeout: timeout, attempts: attempts)
    }

    /// Applies the migrations of `directory` and says what it did, with warnings for recorded
    /// migrations this directory has no file for.
    private static func migrate(url: String, directory: String, lockPolicy: Migrator.LockPolicy?) throws -> Int32 {
        let connection = try Connection(url: url)
        defer { connection.close() }
        let migrator = Migrator(directory: directory, lockPolicy: lockPolicy) { name, attempt in
            guard let lockPolicy else { return }
            complain(
                "migrate: \(name) could not take a lock within \(lockPolicy.timeout) (attempt \(attempt) of"
                    + " \(lockPolicy.attempts)): another session holds it; rolled back, trying again\n")
        }
        let applied: [String]
        do {
            applied = try migrator.migrate(connection)
        } catch {
            // sql/076 reads every app's zone: one the server no longer knows (a name gone from its
            // tzdata) fails it, and every migration after it waits, the fixes for that case included.
            let text = "\(error)"
            if text.contains("time zone \""), text.contains("not recognized") {
                complain(
                    "migrate: hint: an app's reporting time zone is not known to this PostgreSQL (a name gone from"
                        + " its tzdata, e.g. US/Pacific without tzdata-legacy): find it with"
                        + " `SELECT id, time_zone FROM apps`, install the zone (and restart PostgreSQL) or give the app"
                        + " another (`apps update --id APP --time-zone ZONE --no-rebuild`), then migrate again\n")
            }
            throw error
        }
        print(applied.isEmpty ? "migrate: schema is up to date" : "migrate: applied \(applied.joined(separator: ", "))")
        // What a migration could not do and says so (sql/072 without CREATEROLE skips its grants).
        for warning in connection.takeWarnings() { complain("migrate: warning from PostgreSQL: \(warning)\n") }
        // A schema from a newer binary (a rolled-back image) said "up to date" and nothing else.
        // Not an error: rolling back must stay possible (docker-compose runs migrate before the pipeline).
        let (newer, missing) = try migrator.appliedWithoutFile(connection)
        if !newer.isEmpty {
            complain(
                "migrate: warning: the database has migrations newer than any file in \(directory)"
                    + " (\(newer.prefix(5).joined(separator: ", "))\(newer.count > 5 ? ", ..." : ""));"
                    + " it was migrated by a newer detour-analytics, whose schema this one may not match,"
                    + " unless that directory is not this binary's (--sql-dir, DETOUR_SQL_DIR)\n")
        }
        if !missing.isEmpty {
            // Older than this directory's newest file: not a newer binary, a directory that is not ours.
            complain(
                "migrate: warning: the database has migrations with no file in \(directory)"
                    + " (\(missing.prefix(5).joined(separator: ", "))\(missing.count > 5 ? ", ..." : ""));"
                    + " is it this binary's sql directory (--sql-dir, DETOUR_SQL_DIR)?\n")
        }
        return 0
    }

    /// The migrations directory from `--sql-dir`, else `DETOUR_SQL_DIR`, else `locateSQLDirectory()`
    /// (also what `version` names the newest migration of).
    static func sqlDirectory(_ arguments: inout Arguments, _ environment: Environment) throws -> String {
        try arguments.option("--sql-dir", default: environment["DETOUR_SQL_DIR"]) ?? locateSQLDirectory()
    }

    /// Finds the migrations: beside the binary (`<prefix>/share/detour-analytics/sql`), in the source
    /// tree above the binary (development builds under `.build/`), then the system location.
    static func locateSQLDirectory() -> String {
        let fileManager = FileManager.default
        let executable = URL(fileURLWithPath: executablePath()).resolvingSymlinksInPath()
        var candidates: [URL] = []
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(directory.appendingPathComponent("share/detour-analytics/sql"))
            candidates.append(directory.appendingPathComponent("sql"))
            directory = directory.deletingLastPathComponent()
        }
        // A binary built elsewhere (a sanitizer build's scratch path, an install) run from a checkout.
        candidates.append(URL(fileURLWithPath: fileManager.currentDirectoryPath).appendingPathComponent("sql"))
        candidates.append(URL(fileURLWithPath: "/usr/share/detour-analytics/sql"))
        let found = candidates.first { url in
            (try? fileManager.contentsOfDirectory(atPath: url.path))?.contains { $0.hasPrefix("001_") } ?? false
        }
        return (found ?? candidates.last!).path
    }

    /// The running binary's path, from `/proc/self/exe`. `CommandLine.arguments[0]` is only the name
    /// when the shell found the binary on `PATH` (`detour-analytics migrate`, as the README runs it),
    /// and taken as a path it named the working directory: until 2026-12-02 `migrate` and `version`
    /// run that way outside the checkout missed the `sql/` beside the binary.
    private static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
