import Foundation
import Glibc
import Observability
import Postgres

/// The one executable: parses the command word and hands off to the command.
@main
enum DetourAnalytics {
    /// The program's version, which `--version` prints: set here and nowhere else, and bumped by hand
    /// in the commit that makes a release (README, "Versions").
    static let version = "0.1.0"

    static var commands: [any Command.Type] {
        [
            RunCommand.self, ServeCommand.self, AggregateCommand.self, MigrateCommand.self, AppsCommand.self,
            SegmentsCommand.self, ReportCommand.self, SimulateCommand.self, VersionCommand.self, BenchCommand.self,
        ]
    }

    static func main() {
        var tokens = Array(CommandLine.arguments.dropFirst())
        let environment = Environment(variables: ProcessInfo.processInfo.environment)
        limitMallocArenas(environment)
        if let name = environment["DETOUR_LOG_LEVEL"], !name.isEmpty {
            guard let level = Logger.Level(name: name) else {
                let levels = Logger.Level.allCases.map { "\($0)" }.joined(separator: "|")
                complain("error: DETOUR_LOG_LEVEL must be one of \(levels), got \(name.prefix(40))\n")
                exit(64)
            }
            Logger.minimumLevel = level
        }
        // `--version` is the `version` command, as most tools spell it.
        if tokens.first == "--version" { tokens[0] = VersionCommand.name }
        guard let word = tokens.first, !word.hasPrefix("-") else {
            if tokens.isEmpty || tokens.contains("--help") || tokens.contains("-h") {
                print(topLevelHelp)
                exit(0)
            }
            // `detour-analytics --data-dir /x serve` printed the help alone, with status 64 and no
            // word on what was wrong.
            complain("error: the command comes first, then its options, got \(tokens[0])\n\n\(topLevelHelp)\n")
            exit(64)
        }
        tokens.removeFirst()
        guard let command = commands.first(where: { $0.name == word }) else {
            complain("error: unknown command \(word)\n\n\(topLevelHelp)\n")
            exit(64)
        }
        var arguments = Arguments(tokens)
        if arguments.wantsHelp {
            print(command.help)
            exit(0)
        }
        do {
            exit(finishOutput(try command.run(&arguments, environment: environment)))
        } catch let error as UsageError {
            complain("error: \(error)\n\n\(command.help)\n")
            exit(64)
        } catch let error as any RefusalError {
            complain("error: \(error)\n")
            exit(error.exitStatus)
        } catch {
            complain("error: \(error)\(schemaHint(error))\n")
            exit(1)
        }
    }

    /// The likely cause of a PostgreSQL error naming a table, column or function the schema lacks, as
    /// the aggregator and the reports give it: `apps list` on a database never migrated said only
    /// `relation "apps" does not exist`.
    static func schemaHint(_ error: any Error) -> String {
        (error as? PostgresError)?.missingSchemaHint ?? ""
    }

    static var topLevelHelp: String {
        // `bench` is hidden: a measuring tool for bench/run, not an operator command.
        let lines = commands.filter { $0.name != BenchCommand.name }.map {
            "  \($0.name.padding(toLength: 12, withPad: " ", startingAt: 0)) \($0.summary)"
        }
        return """
            detour-analytics: a self-hosted analytics pipeline for deep-link attribution.

            Usage: detour-analytics <command> [options]     (detour-analytics <command> --help for details)
                   detour-analytics --version                  (the version and the newest schema migration it knows)

            Commands:
            \(lines.joined(separator: "\n"))

            Environment:
              DATABASE_URL         PostgreSQL connection URL
              DETOUR_DATA_DIR      data directory (segments, dead letters, key cache); default ./data
              DETOUR_HTTP_ADDR     ingest listen address; default 127.0.0.1:8080
              DETOUR_NODE          this ingest node's segment directory (run, serve); default node-1
              DETOUR_SQL_DIR       migration files (migrate, version); default: sql/ beside the binary or source tree
              DETOUR_MIGRATE_LOCK_TIMEOUT  longest wait for one table lock (migrate); default 5s, 0 waits
              DETOUR_LOG_LEVEL     trace|debug|info|notice|warning|error|critical; default info
            """
    }

    /// glibc gives every thread that allocates under contention its own malloc arena (up to 8 per
    /// core), and each arena keeps what it freed: `serve` under batch load peaked at 86-98 MiB
    /// resident with the default and 79-84 MiB with 2 arenas (noisy), at the same events/s (bench/ingest-ab, 3
    /// rounds of 15 s; the log writer alone was no slower). Two arenas unless the operator set
    /// `MALLOC_ARENA_MAX` (glibc has read it already; calling mallopt would override it).
    /// (`mallopt` lives in <malloc.h>, which the Glibc module does not include: found with dlsym;
    /// `M_ARENA_MAX` is -8 there.)
    private static func limitMallocArenas(_ environment: Environment) {
        guard environment["MALLOC_ARENA_MAX"] == nil, let symbol = dlsym(nil, "mallopt") else { return }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        _ = unsafeBitCast(symbol, to: Mallopt.self)(-8, 2)
    }
}
