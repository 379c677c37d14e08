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

    /// Runs `command` with each case's flags and expects exit status 64 with the case's message on
    /// stderr.
    static func expectUsageRefusals(_ command: [String], _ cases: [([String], String)]) throws {
        for (flags, message) in cases {
            let result = try PipelineProcess.runToEnd(command + flags)
            #expect(result.status == 64, "\(flags): \(result.errors)")
            #expect(result.errors.contains(message), "\(flags): \(result.errors)")
        }
    }

    @Test(
        "a limit flag out of range, a burst without a rate, or a dead-letter cap too small is refused with exit status 64"
    )
    func limitFlagRefusals() throws {
        let cases: [([String], String)] = [
            (["--max-depth", "1"], "--max-depth must be an integer in 2...256, got 1"),
            // Deeper events could be ones the loader cannot read (skipped as undecodable).
            (["--max-depth", "511"], "--max-depth must be an integer in 2...256, got 511"),
            (["--max-values", "10"], "--max-values must be an integer in 1000...100000000, got 10"),
            (["--max-name-length", "0"], "--max-name-length must be an integer in 1...256, got 0"),
            (["--per-ip-connection-limit", "-1"], "--per-ip-connection-limit must be an integer in 0...1000000"),
            (["--rate-limit-burst", "5"], "--rate-limit-burst needs --rate-limit"),
            (["--rate-limit", "10", "--rate-limit-burst", "0.5"], "--rate-limit-burst must be a number of requests"),
            (["--dead-letter-max-disk", "100MiB"], "--dead-letter-max-disk must be at least 4x --segment-bytes or 0"),
            (["--dead-letter-retention", "soon"], "--dead-letter-retention must be a duration"),
            (["--report-threads", "0"], "--report-threads must be an integer in 1...64, got 0"),
        ]
        try Self.expectUsageRefusals(["serve", "--data-dir", "/nonexistent"], cases)
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
}
