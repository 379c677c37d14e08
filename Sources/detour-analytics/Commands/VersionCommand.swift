import Postgres

/// `detour-analytics version` (also `--version`): the program's version and the newest schema
/// migration it knows, on one line.
enum VersionCommand: Command {
    static let name = "version"
    static let summary = "print the version and the newest schema migration it knows (also --version)"
    static let help = """
        Usage: detour-analytics version [--sql-dir DIR]     (or detour-analytics --version)

        Prints one line: the program's version and the newest migration in the sql directory migrate
        would apply, e.g. `detour-analytics 0.1.0 (schema 083_watermark_rolled_up)`, to compare
        with the newest row of schema_migrations. Needs no database. When that directory holds no
        migration file, the line says so in place of the migration (the exit status is still 0).

        Options:
          --sql-dir DIR        directory of migration files (env DETOUR_SQL_DIR; default as for migrate)

        Exit status: 0 (also when the schema is unknown), 64 bad usage.
        """

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let directory = try MigrateCommand.sqlDirectory(&arguments, environment)
        try arguments.finish()
        say("detour-analytics \(DetourAnalytics.version) (\(schema(directory)))")
        return 0
    }

    /// `schema NNN_name` for the newest migration file in `directory`, or why there is none.
    static func schema(_ directory: String) -> String {
        do {
            return "schema " + (try Migrator(directory: directory).migrations().last?.name ?? "none")
        } catch .migration(let message) {
            return "schema unknown: \(message)"
        } catch {
            return "schema unknown: \(error)"
        }
    }
}
