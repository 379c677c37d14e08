import Foundation
import Postgres
import TestSupport
import Testing

@testable import detour_analytics

/// What an operator sees at a terminal: help for every command, clear refusals of bad flags.
@Suite
struct CommandLineTests {
    @Test("top-level --help lists every command and the environment variables")
    func topLevelHelp() throws {
        let result = try PipelineProcess.runToEnd(["--help"])
        #expect(result.status == 0)
        for word in [
            "run", "serve", "aggregate", "migrate", "apps", "segments", "report", "simulate",
            "DATABASE_URL", "DETOUR_DATA_DIR", "DETOUR_HTTP_ADDR", "DETOUR_NODE", "DETOUR_SQL_DIR",
        ] {
            #expect(result.output.contains(word), "top-level help does not mention \(word)")
        }
    }

    @Test(
        "every command's --help describes its flags and variables",
        arguments: [
            ("migrate", ["--database-url", "DATABASE_URL", "--sql-dir"]),
            ("apps", ["--id", "--name", "--json", "DATABASE_URL"]),
            (
                "serve",
                [
                    "--http-addr", "DETOUR_HTTP_ADDR", "--data-dir", "DETOUR_DATA_DIR", "--durability", "--max-body",
                    "--preallocate", "--max-name-length", "--max-depth", "--per-ip-connection-limit",
                    "--rate-limit-burst", "--dead-letter-retention", "--dead-letter-max-disk",
                    "--max-buffered-bodies", "--report-threads", "--max-values",
                ]
            ),
            (
                "run",
                [
                    "--http-addr", "DETOUR_HTTP_ADDR", "--load-interval", "--partition-max-lag-days", "DATABASE_URL",
                    "DETOUR_DATA_DIR",
                ]
            ),
            (
                "aggregate",
                ["--once", "--load-interval", "--partition-max-lag-days", "DATABASE_URL", "DETOUR_DATA_DIR"]
            ),
            ("segments", ["list", "inspect", "verify", "replay", "--from", "--partition-max-lag-days"]),
            ("report", ["--app", "--from", "--by", "--table", "--format", "--date", "--out", "DATABASE_URL"]),
            ("simulate", ["--target", "--app", "DETOUR_PUBLISHABLE_KEY", "DETOUR_SECRET_KEY", "--truth"]),
            ("version", ["--sql-dir", "DETOUR_SQL_DIR"]),
        ])
    func commandHelp(command: String, mentions: [String]) throws {
        let result = try PipelineProcess.runToEnd([command, "--help"])
        #expect(result.status == 0)
        // The README: "each command's --help lists its own" exit statuses (run, serve, aggregate,
        // segments, simulate and version did not until 2026-12-02).
        for word in mentions + ["Exit status: 0 ", " 64 bad usage"] {
            #expect(result.output.contains(word), "\(command) --help does not mention \(word)")
        }
    }

    @Test("an unknown flag is refused with exit status 64 and names the flag")
    func unknownFlag() throws {
        let result = try PipelineProcess.runToEnd(["migrate", "--databse-url", "x"])
        #expect(result.status == 64)
        #expect(result.errors.contains("--databse-url"))
    }

    /// migrate, apps and segments replay exited 1 here until 2026-12-02, as for a bug, while report exited 69.
    @Test(
        "a command with PostgreSQL unreachable exits 69 with one line naming the database, as cron.md says",
        arguments: [
            ["report", "links", "--app", "app_x"],
            ["report", "daily", "--date", "2026-06-01", "--out", NSTemporaryDirectory() + "detour-report-unreachable"],
            ["report", "rebuild"],
            ["migrate"],
            ["apps", "list"],
            ["apps", "create", "--id", "app_x", "--name", "X"],
            ["apps", "update", "--id", "app_x", "--name", "Y"],
            ["apps", "keys", "create", "--app", "app_x", "--kind", "secret"],
            ["apps", "keys", "revoke", "--app", "app_x", "--prefix", "sk_abcd"],
            ["segments", "replay", "--from", "1", "--data-dir", NSTemporaryDirectory() + "detour-replay-unreachable"],
        ])
    func databaseUnreachable(arguments: [String]) throws {
        // A data directory named holds an (empty) event log, so the replay gets as far as the database.
        if let index = arguments.firstIndex(of: "--data-dir") {
            try FileManager.default.createDirectory(
                atPath: arguments[index + 1] + "/segments", withIntermediateDirectories: true)
        }
        // Port 1 on the loopback: nothing listens there, the connection is refused at once.
        let result = try PipelineProcess.runToEnd(
            arguments + ["--database-url", "postgresql://postgres@127.0.0.1:1/detour?connect_timeout=5"])
        #expect(result.status == 69, "\(result.errors)")
        #expect(result.errors.hasPrefix("error: "))
        #expect(result.errors.lowercased().contains("postgresql"), "\(result.errors)")
        #expect(result.errors.split(separator: "\n").count == 1, "\(result.errors)")
        #expect(result.output.isEmpty)
    }

    @Test(
        "report daily with a malformed --format exits 64 (bad usage, as cron.md says), not 1",
        arguments: ["pdf", "", "csv,pdf"])
    func reportDailyBadFormat(format: String) throws {
        // No database is needed: the list is refused while the arguments are read.
        let result = try PipelineProcess.runToEnd([
            "report", "daily", "--date", "2026-06-01", "--out", NSTemporaryDirectory() + "detour-report-bad-format",
            "--format", format, "--database-url", "postgresql://postgres@127.0.0.1:1/detour?connect_timeout=5",
        ])
        #expect(result.status == 64, "\(result.errors)")
        #expect(result.errors.hasPrefix("error: --format: "), "\(result.errors)")
        #expect(!result.errors.contains("invalid parameter"), "\(result.errors)")
    }

    @Test(
        "a report refused says why in one line in the command line's words, also with --format json",
        arguments: ["table", "csv", "json"])
    func reportRefusalWords(format: String) throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let environment = ["DATABASE_URL": database.url]
        let cases: [([String], String)] = [
            ([], "error: --app is required\n"),
            (["--app", "nope"], "error: unknown app nope\n"),
            (["--app", "nope", "--from", "June"], "error: --from: expected a date YYYY-MM-DD, got June\n"),
        ]
        for (extra, expected) in cases {
            let result = try PipelineProcess.runToEnd(
                ["report", "links", "--format", format] + extra, environment: environment)
            #expect(result.status == 64, "\(extra)")
            #expect(result.errors == expected, "\(format) \(extra)")
            #expect(result.output.isEmpty)
        }
    }

    @Test("report daily writes every complete app, refuses the others, and exits 75 so cron tries again")
    func reportDailyEachApp() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try connection.execute(
            """
            INSERT INTO apps (id, name, time_zone) VALUES ('la', 'la', 'America/Los_Angeles'), ('utc', 'utc', 'UTC')
            """)
        // 01:20Z: the UTC app's 2026-06-01 is complete (00:10Z), Los Angeles' is not (07:10Z).
        try connection.execute(
            """
            INSERT INTO load_checkpoints (node, segment, frame_offset, newest_received_at)
            VALUES ('node-1', 1, 0, '2026-06-02T01:20:00Z')
            """)
        let out = try TemporaryDirectory()
        let arguments = ["report", "daily", "--date", "2026-06-01", "--out", out.path, "--format", "json"]
        let result = try PipelineProcess.runToEnd(arguments, environment: ["DATABASE_URL": database.url])
        #expect(result.status == 75, "\(result.errors)")
        #expect(result.output.hasPrefix("report daily: utc → \(out.path)/2026-06-01/utc"), "\(result.output)")
        #expect(result.errors.hasPrefix("error: day 2026-06-01 of app la is not completely loaded yet"))
        #expect(FileManager.default.fileExists(atPath: out.path + "/2026-06-01/utc/report.json"))
        #expect(!FileManager.default.fileExists(atPath: out.path + "/2026-06-01/la"))

        try connection.execute("UPDATE load_checkpoints SET newest_received_at = '2026-06-02T07:10:00Z'")
        let later = try PipelineProcess.runToEnd(arguments, environment: ["DATABASE_URL": database.url])
        #expect(later.status == 0, "\(later.errors)")
        #expect(later.output.contains("report daily: la → ") && later.output.contains("report daily: utc → "))
        #expect(later.errors.isEmpty, "\(later.errors)")
    }

    /// A command line is readable by every local user (`ps`, /proc/PID/cmdline); scripts/run --demo
    /// put the demo app's secret key there for as long as the simulated month took to send.
    @Test("simulate takes its keys from DETOUR_PUBLISHABLE_KEY and DETOUR_SECRET_KEY, off the command line")
    func simulateKeysFromEnvironment() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory()
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let keys = try PipelineProcess.createApp(id: "sim", name: "Simulated", environment: environment)
        let server = try PipelineProcess(["serve", "--http-addr", "127.0.0.1:0"], environment: environment)
        defer { server.signal(SIGTERM); _ = server.waitForExit(timeout: .seconds(20)) }
        let base = try #require(server.waitForLine(startingWith: "listening on "), "\(server.standardError)")
        let arguments = ["simulate", "--target", base, "--app", "sim", "--links", "1", "--devices", "2", "--days", "1"]
        let simulated = try PipelineProcess.runToEnd(
            arguments,
            environment: [
                "DETOUR_PUBLISHABLE_KEY": keys["publishable_key"] ?? "", "DETOUR_SECRET_KEY": keys["secret_key"] ?? "",
            ], timeout: .seconds(120))
        #expect(simulated.status == 0, "\(simulated.output) \(simulated.errors)")
        let missing = try PipelineProcess.runToEnd(arguments)
        #expect(missing.status == 64)
        #expect(missing.errors.contains("--publishable-key is required"), "\(missing.errors)")
    }

    @Test("aggregate --once with PostgreSQL unreachable exits 69, as the report commands, not 1 as for a bug")
    func aggregateDatabaseUnreachable() throws {
        let data = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: data.path + "/segments", withIntermediateDirectories: true)
        let result = try PipelineProcess.runToEnd([
            "aggregate", "--once", "--data-dir", data.path, "--database-url",
            "postgresql://postgres@127.0.0.1:1/detour?connect_timeout=5",
        ])
        #expect(result.status == 69, "\(result.errors)")
        #expect(result.errors.contains("error: database: "), "\(result.errors)")
        #expect(result.output.isEmpty, "\(result.output)")
    }

    @Test("aggregate --once against a schema that was never migrated exits 69 and says to run migrate")
    func aggregateUnmigratedSchema() throws {
        let database = try TestDatabase.make(migrate: false)
        defer { database.drop() }
        let data = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: data.path + "/segments", withIntermediateDirectories: true)
        let result = try PipelineProcess.runToEnd(
            ["aggregate", "--once", "--data-dir", data.path], environment: ["DATABASE_URL": database.url])
        #expect(result.status == 69, "\(result.errors)")
        #expect(result.errors.contains("run detour-analytics migrate"), "\(result.errors)")
        // The other commands say so too (apps list said only: relation "apps" does not exist).
        let apps = try PipelineProcess.runToEnd(["apps", "list"], environment: ["DATABASE_URL": database.url])
        #expect(apps.status == 69, "\(apps.errors)")
        #expect(apps.errors.contains("run detour-analytics migrate"), "\(apps.errors)")
        // And the reports (until 2026-12-02 they said only which relation or function was missing).
        for report in [["links", "--app", "a"], ["daily", "--date", "2026-01-01", "--out", data.path], ["rebuild"]] {
            let result = try PipelineProcess.runToEnd(["report"] + report, environment: ["DATABASE_URL": database.url])
            #expect(result.status == 69, "\(report): \(result.errors)")
            #expect(result.errors.contains("run detour-analytics migrate"), "\(report): \(result.errors)")
        }
    }

    @Test("segments list with a data directory that holds no event log, or an unknown node, says so and exits 1")
    func segmentsListWithoutLog() throws {
        let data = try TemporaryDirectory()
        let typo = data.path + "/no-such-data"
        let missing = try PipelineProcess.runToEnd(["segments", "list", "--data-dir", typo])
        #expect(missing.status == 1, "\(missing.output)")
        #expect(missing.errors.contains("no event log at \(typo)/segments"), "\(missing.errors)")
        // The variable too: scripts/run's data is in ./.data, and the default is ./data.
        #expect(missing.errors.contains("(check --data-dir or DETOUR_DATA_DIR)"), "\(missing.errors)")
        try FileManager.default.createDirectory(
            atPath: data.path + "/segments/node-1", withIntermediateDirectories: true)
        let node = try PipelineProcess.runToEnd(["segments", "list", "--data-dir", data.path, "--node", "node-2"])
        #expect(node.status == 1)
        #expect(node.errors.contains("no node node-2 under \(data.path)/segments (nodes: node-1)"), "\(node.errors)")
        // An event log with no segment yet (a fresh install) is no error.
        let empty = try PipelineProcess.runToEnd(["segments", "list", "--data-dir", data.path])
        #expect(empty.status == 0, "\(empty.errors)")
        #expect(empty.output.contains("total: 0 segments"))
        let emptyVerified = try PipelineProcess.runToEnd(["segments", "verify", "--data-dir", data.path])
        #expect(emptyVerified.status == 0, "\(emptyVerified.errors)")
    }

    @Test("segments verify given the data directory, and replay with one that holds no log, say so and exit 1")
    func verifyAndReplayWrongDirectory() throws {
        let data = try TemporaryDirectory()
        try FileManager.default.createDirectory(
            atPath: data.path + "/segments/node-1", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: data.path + "/deadletter/node-1", withIntermediateDirectories: true)
        // It read segments/ and deadletter/ as two empty nodes: "ok: 0 segments", status 0.
        let verify = try PipelineProcess.runToEnd(["segments", "verify", data.path])
        #expect(verify.status == 1, "\(verify.output)")
        #expect(verify.errors.contains("\(data.path) is a data directory, not an event log"), "\(verify.errors)")
        // It replayed nothing and said "0 records read", status 0, before connecting anywhere useful.
        let typo = data.path + "/no-such-data"
        let replay = try PipelineProcess.runToEnd(
            ["segments", "replay", "--from", "1", "--data-dir", typo],
            environment: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"])
        #expect(replay.status == 1, "\(replay.output) \(replay.errors)")
        #expect(replay.errors.contains("no event log at \(typo)/segments"), "\(replay.errors)")
    }

    @Test("a DETOUR_LOG_LEVEL that is not a level is refused with exit status 64 and the levels listed")
    func badLogLevel() throws {
        let result = try PipelineProcess.runToEnd(["migrate", "--help"], environment: ["DETOUR_LOG_LEVEL": "verbose"])
        #expect(result.status == 64)
        #expect(result.errors.contains("DETOUR_LOG_LEVEL") && result.errors.contains("warning"))
        let upper = try PipelineProcess.runToEnd(["migrate", "--help"], environment: ["DETOUR_LOG_LEVEL": "WARNING"])
        #expect(upper.status == 0)
    }

    @Test("a segment size outside 64KiB...64GiB is refused with exit status 64 before anything starts")
    func segmentSizeBounds() throws {
        let data = NSTemporaryDirectory() + "/detour-segment-bytes-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: data) }
        for size in ["1B", "63KiB", "65GiB"] {
            let result = try PipelineProcess.runToEnd(
                ["serve", "--segment-bytes", size, "--data-dir", data, "--http-addr", "127.0.0.1:0"])
            #expect(result.status == 64, "\(size): \(result.errors)")
            #expect(result.errors.contains("--segment-bytes must be 64KiB...64GiB"), "\(size): \(result.errors)")
            #expect(!FileManager.default.fileExists(atPath: data + "/segments"), "\(size)")
        }
    }

    @Test(
        "a duration keeps fractions of a millisecond (250us and 0.25ms were once cut to 0); a bad one names the units")
    func durationParsing() throws {
        #expect(try parseDuration("250us", flag: "--commit-delay") == .microseconds(250))
        #expect(try parseDuration("0.25ms", flag: "--commit-delay") == .microseconds(250))
        #expect(try parseDuration("2s", flag: "--x") == .seconds(2))
        #expect(try parseDuration("1.5", flag: "--x") == .milliseconds(1500))
        #expect(try parseDuration("5m", flag: "--x") == .seconds(300))
        #expect(try parseDuration("7d", flag: "--x") == .seconds(7 * 86400))
        #expect(try parseDuration("36500d", flag: "--retention") == .seconds(36500 * 86400))  // "keep for a century"
        for bad in ["250 parsecs", "-1s", "", "1e12s"] {
            #expect(throws: UsageError.self, "\(bad)") { try parseDuration(bad, flag: "--x") }
        }
        // Through the binary: refused with the usage status, naming the flag and the units.
        let refused = try PipelineProcess.runToEnd([
            "serve", "--commit-delay", "250 parsecs", "--data-dir", "/nonexistent",
        ])
        #expect(refused.status == 64)
        #expect(refused.errors.contains("--commit-delay must be a duration such as 200us"), "\(refused.errors)")
    }

    @Test(
        "a limit flag out of range, a burst without a rate, or a dead-letter cap too small is refused with exit status 64"
    )
    func limitFlagRefusals() throws {
        let cases: [([String], String)] = [
            (["--max-depth", "1"], "--max-depth must be an integer in 2...1024, got 1"),
            (["--max-values", "10"], "--max-values must be an integer in 1000...100000000, got 10"),
            (["--max-name-length", "0"], "--max-name-length must be an integer in 1...256, got 0"),
            (["--per-ip-connection-limit", "-1"], "--per-ip-connection-limit must be an integer in 0...1000000"),
            (["--rate-limit-burst", "5"], "--rate-limit-burst needs --rate-limit"),
            (["--rate-limit", "10", "--rate-limit-burst", "0.5"], "--rate-limit-burst must be a number of requests"),
            (["--dead-letter-max-disk", "100MiB"], "--dead-letter-max-disk must be at least 4x --segment-bytes or 0"),
            (["--dead-letter-retention", "soon"], "--dead-letter-retention must be a duration"),
            (["--report-threads", "0"], "--report-threads must be an integer in 1...64, got 0"),
        ]
        for (flags, message) in cases {
            let result = try PipelineProcess.runToEnd(["serve", "--data-dir", "/nonexistent"] + flags)
            #expect(result.status == 64, "\(flags)")
            #expect(result.errors.contains(message), "\(flags): \(result.errors)")
        }
        // Large segments alone do not trip the dead-letter cap's default (it grows with them).
        var arguments = Arguments(["--segment-bytes", "1GiB"])
        let options = try PipelineOptions.parse(&arguments, environment: Environment(variables: [:]))
        #expect(options.deadLetterMaxBytes == 4 << 30)
        #expect(options.deadLetter.maxDiskBytes == 4 << 30)
        // A value from the environment is refused under the variable's name, not a flag never typed.
        func refusal(_ flags: [String], _ variables: [String: String]) -> String? {
            var arguments = Arguments(flags)
            do {
                _ = try PipelineOptions.parse(&arguments, environment: Environment(variables: variables))
                return nil
            } catch {
                return (error as? UsageError)?.description
            }
        }
        #expect(
            refusal([], ["DETOUR_HTTP_ADDR": "localhost:8080"])
                == "DETOUR_HTTP_ADDR must be an IPv4 address such as 127.0.0.1:8080, got localhost:8080")
        #expect(refusal([], ["DETOUR_HTTP_ADDR": "127.0.0.1"]) == "DETOUR_HTTP_ADDR must be HOST:PORT, got 127.0.0.1")
        #expect(refusal([], ["DETOUR_NODE": "../n1"]) == "DETOUR_NODE must be a plain name, got ../n1")
        #expect(
            refusal(["--http-addr", "localhost:8080"], ["DETOUR_HTTP_ADDR": "127.0.0.1:9"])
                == "--http-addr must be an IPv4 address such as 127.0.0.1:8080, got localhost:8080")
        var reportArguments = Arguments(["--report-threads", "2"])
        let reportOptions = try PipelineOptions.parse(&reportArguments, environment: Environment(variables: [:]))
        #expect(reportOptions.ingest.reportThreads == 2)
    }

    @Test(
        "a malformed, overflowing or out-of-range value is refused with exit status 64 naming the flag, not the field",
        arguments: [
            (["--max-body", "99999999999999TiB"], "--max-body is too large"),
            (["--commit-bytes", "0"], "--commit-bytes must be 1B...64MiB"),
            (["--commit-bytes", "65MiB"], "--commit-bytes must be 1B...64MiB"),
            (["--max-disk", "1KiB"], "--max-disk must be at least 64KiB, or 0 for no cap"),
            (["--segment-age", "0"], "--segment-age must be 1s...7d, got 0"),
            (["--segment-age", "8d"], "--segment-age must be 1s...7d, got 8d"),
            (["--idle-timeout", "0"], "--idle-timeout must be whole seconds, at least 1s"),
            (["--idle-timeout", "1500ms"], "--idle-timeout must be whole seconds, at least 1s"),
            (["--rate-limit", "inf"], "--rate-limit must be a positive number"),
            (["--max-body", "1000"], "--max-body must be at least 1024 bytes"),
            (["--max-decompressed", "1KiB"], "--max-decompressed must be at least --max-body"),
            (["--max-buffered-bodies", "1KiB"], "--max-buffered-bodies must be at least --max-body"),
            (["--connection-memory", "1"], "--connection-memory must be between 4KiB and 1MiB"),
            (["--http-addr", "localhost:8080"], "--http-addr must be an IPv4 address"),
        ])
    func flagRefusalsNameTheFlag(flags: [String], message: String) throws {
        let data = NSTemporaryDirectory() + "/detour-flag-refusal-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: data) }
        let result = try PipelineProcess.runToEnd(["serve", "--data-dir", data] + flags)
        #expect(result.status == 64, "\(flags): \(result.errors)")
        #expect(result.errors.hasPrefix("error: " + message), "\(flags): \(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: data), "\(flags) created the data directory")
    }

    @Test("an aggregator value out of range names its flag")
    func aggregatorRefusalNamesTheFlag() throws {
        let result = try PipelineProcess.runToEnd(
            ["aggregate", "--once", "--load-interval", "1ms", "--database-url", "postgresql://127.0.0.1:1/x"])
        #expect(result.status == 64)
        #expect(result.errors.hasPrefix("error: --load-interval must be at least 10 ms"), "\(result.errors)")
    }

    @Test(
        "--partition-max-lag-days outside 0...3660 or not a number is refused with exit status 64 naming the flag",
        arguments: [
            ["aggregate", "--once", "--partition-max-lag-days", "3661"],
            ["aggregate", "--once", "--partition-max-lag-days", "-1"],
            ["run", "--partition-max-lag-days", "ninety"],
            ["segments", "replay", "--from", "1", "--partition-max-lag-days", "99999"],
        ])
    func partitionMaxLagRefused(arguments: [String]) throws {
        let data = NSTemporaryDirectory() + "/detour-lag-refusal-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: data) }
        let result = try PipelineProcess.runToEnd(
            arguments + ["--data-dir", data, "--database-url", "postgresql://127.0.0.1:1/x"])
        #expect(result.status == 64, "\(arguments): \(result.errors)")
        #expect(
            result.errors.hasPrefix("error: --partition-max-lag-days must be an integer in 0...3660, got "),
            "\(arguments): \(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: data), "\(arguments) created the data directory")
    }

    @Test("--partition-max-lag-days sets the aggregator's partition window; without it the window is 92 days")
    func partitionMaxLagParsed() throws {
        var given = Arguments(["--partition-max-lag-days", "3660"])
        let set = try AggregatorOptions.parse(&given, databaseURL: "postgresql://x", dataDirectory: "/tmp/x")
        #expect(set.partitionMaxLagDays == 3660)
        var none = Arguments([])
        let unset = try AggregatorOptions.parse(&none, databaseURL: "postgresql://x", dataDirectory: "/tmp/x")
        #expect(unset.partitionMaxLagDays == 92)
    }

    @Test("--max-disk 0 means no cap, like the other size limits' 0, instead of refusing every event")
    func maxDiskZeroIsNoCap() throws {
        var arguments = Arguments(["--max-disk", "0"])
        let options = try PipelineOptions.parse(&arguments, environment: Environment(variables: [:]))
        #expect(options.log.maxDiskBytes == nil)
        var capped = Arguments(["--max-disk", "64KiB"])
        let cappedOptions = try PipelineOptions.parse(&capped, environment: Environment(variables: [:]))
        #expect(cappedOptions.log.maxDiskBytes == 64 << 10)
    }

    @Test("an option before the command is refused on standard error with exit status 64, saying why")
    func optionBeforeCommand() throws {
        let result = try PipelineProcess.runToEnd(["--data-dir", "/var/lib/detour", "serve"])
        #expect(result.status == 64)
        // It printed the help to standard output, and nothing said what was wrong.
        #expect(result.errors.hasPrefix("error: the command comes first, then its options, got --data-dir"))
        #expect(result.output.isEmpty, "\(result.output)")
    }

    @Test("an unknown command is refused with exit status 64")
    func unknownCommand() throws {
        let result = try PipelineProcess.runToEnd(["frobnicate"])
        #expect(result.status == 64)
        #expect(result.errors.contains("unknown command frobnicate"))
    }

    @Test("apps create refuses an invalid id and a second app with the same id")
    func appsCreateRefusals() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let environment = ["DATABASE_URL": database.url]
        let bad = try PipelineProcess.runToEnd(
            ["apps", "create", "--id", "bad id!", "--name", "x"], environment: environment)
        #expect(bad.status == 64)
        // An app id names the daily report's directory, <out>/<date>/<app>: `..` wrote every day's
        // report of that app into <out> itself, each date over the last.
        for dots in [".", ".."] {
            let refused = try PipelineProcess.runToEnd(
                ["apps", "create", "--id", dots, "--name", "x"], environment: environment)
            #expect(refused.status == 64, "\(dots): \(refused.output)")
            #expect(refused.errors.contains("--id must be"), "\(refused.errors)")
        }
        let first = try PipelineProcess.runToEnd(
            ["apps", "create", "--id", "twice", "--name", "x"], environment: environment)
        #expect(first.status == 0)
        #expect(first.output.contains("publishable key: pk_"))
        let second = try PipelineProcess.runToEnd(
            ["apps", "create", "--id", "twice", "--name", "x"], environment: environment)
        #expect(second.status == 64)
        #expect(second.errors == "error: app twice already exists (apps list shows it)\n", "\(second.errors)")
    }

    @Test("aggregate --once with a data directory that holds no event log says so instead of quietly loading nothing")
    func aggregateWithoutEventLog() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let typo = NSTemporaryDirectory() + "/detour-no-log-" + UUID().uuidString
        let result = try PipelineProcess.runToEnd(
            ["aggregate", "--once", "--data-dir", typo], environment: ["DATABASE_URL": database.url])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("aggregate: warning: no event log at \(typo)/segments"), "\(result.output)")
        #expect(result.output.contains("(check --data-dir or DETOUR_DATA_DIR)"), "\(result.output)")
        #expect(result.errors.contains("segments.missing"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: typo), "the aggregator created the mistyped directory")
    }

    @Test("SIGTERM while serve is still starting (waiting for PostgreSQL) ends in a clean shutdown, not a kill")
    func signalDuringStartUp() throws {
        // A "PostgreSQL" that takes the connection and never says a word: start-up waits on it.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 4) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        let port = UInt16(bigEndian: address.sin_port)
        let data = NSTemporaryDirectory() + "/detour-startup-signal-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: data) }
        let serve = try PipelineProcess(
            ["serve", "--http-addr", "127.0.0.1:0", "--data-dir", data],
            environment: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:\(port)/none?connect_timeout=4"])
        // Its first connection shows it is inside start-up (loading keys); then the signal.
        var incoming = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        try #require(poll(&incoming, 1, 30_000) == 1, "serve never connected; log: \(serve.standardError)")
        serve.signal(SIGTERM)
        let status = serve.waitForExit(timeout: .seconds(60))
        #expect(status == 0, "exit \(String(describing: status)); log: \(serve.standardError)")
        #expect(serve.standardError.contains("shutdown.begin signal=SIGTERM"), "\(serve.standardError)")
    }

    @Test("SIGTERM again stops an aggregator whose clean shutdown waits for a cycle blocked on a lock, at once")
    func secondSignalForcesShutdown() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let (aggregate, holder, data) = try aggregateStoppingOnLock(database)
        defer { withExtendedLifetime(data) { holder.close() } }
        // Past the window in which a repeat counts as the same delivery (its design, not a bound on
        // the code's speed; `doubledSignalIsOneRequest` tests the window itself).
        Thread.sleep(forTimeInterval: (Termination.repeatWindow + .milliseconds(100)) / .seconds(1))
        // The clean stop waits for the cycle, which waits for the lock, held until this test ends.
        // The second signal was ignored: nothing but SIGKILL stopped the process. The other signal
        // is the same request (Ctrl-C under scripts/run: SIGINT from the terminal, SIGTERM from the
        // script), the same one again forces the stop.
        aggregate.signal(SIGINT)
        aggregate.signal(SIGTERM)
        let status = aggregate.waitForExit(timeout: .seconds(30))
        #expect(status == 128 + SIGTERM, "exit \(String(describing: status)); log: \(aggregate.standardError)")
        #expect(aggregate.standardError.contains("shutdown.forced signal=SIGTERM"), "\(aggregate.standardError)")
        try holder.execute("ROLLBACK")
    }

    /// An `aggregate` whose load cycle waits for a lock another session holds (as a long report
    /// rebuild or migration can), sent SIGTERM once it waits: it has begun its clean stop, which waits
    /// for the cycle. The holder's transaction keeps the lock until it rolls back or closes; the
    /// data directory lives as long as the caller keeps it.
    private func aggregateStoppingOnLock(_ database: TestDatabase, environment: [String: String] = [:]) throws
        -> (PipelineProcess, Connection, TemporaryDirectory)
    {
        let data = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: data.path + "/segments", withIntermediateDirectories: true)
        let holder = try database.connect()
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE load_checkpoints IN ACCESS EXCLUSIVE MODE")
        let aggregate = try PipelineProcess(
            ["aggregate", "--data-dir", data.path],
            environment: environment.merging(["DATABASE_URL": database.url]) { $1 })
        let observer = try database.connect()
        defer { observer.close() }
        var waiting = false
        for _ in 0..<1500 where !waiting {
            waiting =
                try observer.query(
                    "SELECT count(*) AS n FROM pg_locks WHERE NOT granted AND relation = 'load_checkpoints'::regclass"
                ).first?["n", as: Int.self] == 1
            if !waiting { Thread.sleep(forTimeInterval: 0.02) }
        }
        try #require(waiting, "the load cycle never waited for the lock; log: \(aggregate.standardError)")
        aggregate.signal(SIGTERM)
        for _ in 0..<500 where !aggregate.standardError.contains("shutdown.begin") {
            Thread.sleep(forTimeInterval: 0.02)
        }
        try #require(aggregate.standardError.contains("shutdown.begin signal=SIGTERM"), "\(aggregate.standardError)")
        return (aggregate, holder, data)
    }

    @Test(
        "the same signal twice at once (timeout(1) sends it to the process and to its group) is one request to stop cleanly"
    )
    func doubledSignalIsOneRequest() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        // A window of a minute: the second signal below comes within it however slow this machine
        // is. Until 2026-12-02 a doubled delivery forced the stop (exit 143): every `timeout -s TERM`.
        let (aggregate, holder, data) = try aggregateStoppingOnLock(
            database, environment: ["DETOUR_TEST_SIGNAL_REPEAT_MS": "60000"])
        defer { withExtendedLifetime(data) { holder.close() } }
        aggregate.signal(SIGTERM)
        // Not forced: still waiting for its cycle (bounded wait for an exit that must not come).
        #expect(aggregate.waitForExit(timeout: .seconds(1)) == nil, "\(aggregate.standardError)")
        #expect(!aggregate.standardError.contains("shutdown.forced"), "\(aggregate.standardError)")
        // Once the lock is given back, the cycle ends and the process stops cleanly.
        try holder.execute("ROLLBACK")
        #expect(aggregate.waitForExit(timeout: .seconds(30)) == 0, "\(aggregate.standardError)")
    }

    @Test(
        "standard output on a full disk ends a command with exit status 74 and one line saying so, not a crash",
        arguments: [
            ["aggregate", "--once"], ["report", "daily", "--date", "2026-06-01", "--allow-partial"],
            ["apps", "create", "--id", "keys-lost", "--name", "x", "--json"],
        ])
    func standardOutputOnFullDisk(arguments: [String]) throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let environment = ["DATABASE_URL": database.url]
        _ = try PipelineProcess.createApp(id: "full", name: "full", environment: environment)
        let data = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: data.path + "/segments", withIntermediateDirectories: true)
        let extra =
            arguments[0] == "aggregate"
            ? ["--data-dir", data.path] : arguments[0] == "report" ? ["--out", data.path] : []
        // cron.md's `>>/var/log/detour-report.log 2>&1` on a disk that filled up: the summary line
        // crashed the process (exit 132, FileHandle.write's trap) after the work was done.
        let result = try PipelineProcess.runToEnd(
            arguments + extra, environment: environment, standardOutput: "/dev/full")
        #expect(result.status == 74, "\(result.errors)")
        #expect(result.errors.hasPrefix("error: writing standard output: No space left on device"), "\(result.errors)")
        #expect(!result.errors.contains("Fatal error"), "\(result.errors)")
    }

    @Test("serve with standard error on a full disk serves and stops cleanly instead of crashing at its first log line")
    func standardErrorOnFullDisk() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory()
        let (serve, _) = try PipelineProcess.readyServe(database: database, data: data, standardError: "/dev/full")
        serve.signal(SIGTERM)
        #expect(serve.waitForExit(timeout: .seconds(60)) == 0)
    }

    @Test("SIGHUP (a closed terminal) stops serve cleanly, as SIGTERM does, instead of killing it")
    func hangUpStopsCleanly() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory()
        let (serve, _) = try PipelineProcess.readyServe(database: database, data: data)
        serve.signal(SIGHUP)
        // The default action killed it (terminated by the signal, no exit status) without a shutdown.
        #expect(serve.waitForExit(timeout: .seconds(60)) == 0, "\(serve.standardError)")
        #expect(serve.standardError.contains("shutdown.begin signal=SIGHUP"), "\(serve.standardError)")
        #expect(serve.standardError.contains("server.stopped"), "\(serve.standardError)")
    }

    @Test("migrate through the binary is idempotent")
    func migrateTwice() throws {
        let database = try TestDatabase.make(migrate: false)
        defer { database.drop() }
        let environment = ["DATABASE_URL": database.url]
        let first = try PipelineProcess.runToEnd(["migrate"], environment: environment)
        #expect(first.status == 0, "\(first.errors)")
        #expect(first.output.contains("applied 001_core"))
        let second = try PipelineProcess.runToEnd(["migrate"], environment: environment)
        #expect(second.status == 0)
        #expect(second.output.contains("up to date"))
    }

    @Test("migrate exits 69 for a file PostgreSQL refuses, as for any failing database, and 1 for no migration files")
    func migrateFailures() throws {
        let database = try TestDatabase.make(migrate: false)
        defer { database.drop() }
        let sql = try TemporaryDirectory()
        let environment = ["DATABASE_URL": database.url, "DETOUR_SQL_DIR": sql.path]
        let empty = try PipelineProcess.runToEnd(["migrate"], environment: environment)
        #expect(empty.status == 1, "\(empty.errors)")
        #expect(empty.errors.contains("no migration files (NNN_name.sql) in \(sql.path)"), "\(empty.errors)")
        try Data("CREATE TABLE broken (".utf8).write(to: URL(fileURLWithPath: sql.path + "/001_broken.sql"))
        let refused = try PipelineProcess.runToEnd(["migrate"], environment: environment)
        // The migration's own defect: trying again later cannot help, so not 69.
        #expect(refused.status == 1, "\(refused.errors)")
        #expect(refused.errors.hasPrefix("error: PostgreSQL error 42601"), "\(refused.errors)")
    }

    @Test(
        "migrate shows the WARNINGs a migration raises (sql/072 skipping its grants without CREATEROLE); NOTICEs stay quiet"
    )
    func migrateShowsServerWarnings() throws {
        let database = try TestDatabase.make(migrate: false)
        defer { database.drop() }
        let sql = try TemporaryDirectory()
        let environment = ["DATABASE_URL": database.url, "DETOUR_SQL_DIR": sql.path]
        let file =
            #"DO $$ BEGIN RAISE NOTICE 'already there, skipping'; RAISE WARNING 'role detour_writer does not exist: the pipeline''s privileges were not granted'; END $$;"#
        try Data(file.utf8).write(to: URL(fileURLWithPath: sql.path + "/001_warns.sql"))
        let result = try PipelineProcess.runToEnd(["migrate"], environment: environment)
        #expect(result.status == 0, "\(result.errors)")
        // Until 2026-12-02 every server message was dropped: migrate said "applied" and nothing else.
        #expect(
            result.errors.contains(
                "migrate: warning from PostgreSQL: role detour_writer does not exist: the pipeline's privileges were not granted"
            ),
            "\(result.errors)")
        #expect(!result.errors.contains("skipping"), "\(result.errors)")
    }
}
