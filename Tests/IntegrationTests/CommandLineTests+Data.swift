import Foundation
import Postgres
import TestSupport
import Testing

@testable import detour_analytics

// The commands that work on a database or a data directory (report daily, simulate, aggregate,
// segments, apps create, migrate): their answers and exit statuses when either is missing,
// unreachable, unmigrated or refuses.

extension CommandLineTests {
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

    @Test("simulate refuses a malformed target, a rate too small to schedule, a day that does not exist: exit 64")
    func simulateRefusals() throws {
        let keys = ["--publishable-key", "pk", "--secret-key", "sk", "--app", "sim"]
        let cases: [([String], String)] = [
            (["--target", "localhost:8080"], "invalid --target localhost:8080: expected http://host[:port]"),
            (["--target", "http://127.0.0.1:notaport"], "invalid --target http://127.0.0.1:notaport"),
            // Until 2026-12-05: a crash (an overflowing wait), and March 2.
            (["--rate", "1e-10"], "--rate must be a number of events per second, at least 0.001"),
            (["--start", "2026-02-30"], "--start: no such day 2026-02-30"),
            (["--deadline", "0s"], "--deadline must be from 1s to 366d"),
        ]
        try Self.expectUsageRefusals(["simulate"] + keys, cases)
        // A day that exists passes (and sending then fails: nothing listens on port 1).
        let valid = try PipelineProcess.runToEnd(
            ["simulate"] + keys + ["--start", "2024-02-29", "--days", "1", "--target", "http://127.0.0.1:1"])
        #expect(valid.status == 1, "\(valid.errors)")
        #expect(valid.errors.contains("connect failed"), "\(valid.errors)")
    }

    @Test("simulate's --deadline also ends a request waiting on a server that does not answer")
    func simulateDeadlineEndsAWait() throws {
        // A listener that never accepts: the kernel completes the handshake, nobody answers.
        let listener = try SilentListener(backlog: 64)
        defer { withExtendedLifetime(listener) {} }  // open until the test ends, not its last use
        let target = "http://127.0.0.1:\(listener.port)"
        let keys = ["--publishable-key", "pk", "--secret-key", "sk", "--app", "sim"]
        // Each request waits up to the 30 s I/O timeout; until 2026-12-05 the deadline was looked at
        // only between requests, so this ran about 32 s and printed "recv failed: errno 11".
        let started = ContinuousClock.now
        let result = try PipelineProcess.runToEnd(
            ["simulate", "--target", target, "--links", "1", "--devices", "2", "--days", "2", "--deadline", "1s"]
                + keys, timeout: .seconds(120))
        #expect(result.status == 1, "\(result.errors)")
        #expect(result.output.contains("recv timed out"), "\(result.output)")
        #expect(ContinuousClock.now - started < .seconds(25), "the 30 s timeout ran out past the 1 s deadline")
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
        // A log that cannot be reached is not "no event log" (until 2026-12-05 it was, as for a typo).
        // ELOOP: this suite runs as root, whom EACCES does not stop.
        let loop = data.path + "/loop"
        try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: loop)
        for verb in [["segments", "list"], ["segments", "replay", "--from", "1"]] {
            let unreachable = try PipelineProcess.runToEnd(
                verb + ["--data-dir", loop], environment: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"])
            #expect(unreachable.status == 1, "\(verb): \(unreachable.output)")
            #expect(
                unreachable.errors.contains("cannot read \(loop)/segments: Too many levels of symbolic links"),
                "\(verb): \(unreachable.errors)")
        }
        try FileManager.default.createDirectory(
            atPath: data.path + "/segments/node-1", withIntermediateDirectories: true)
        let node = try PipelineProcess.runToEnd(["segments", "list", "--data-dir", data.path, "--node", "node-2"])
        #expect(node.status == 1)
        #expect(node.errors.contains("no node node-2 under \(data.path)/segments (nodes: node-1)"), "\(node.errors)")
        // A node is one directory: a file there, `..` or a path is none (until 2026-12-05: "0 segments", exit 0).
        #expect(FileManager.default.createFile(atPath: data.path + "/segments/afile", contents: Data()))
        for name in ["afile", "..", "node-1/../node-1"] {
            let listed = try PipelineProcess.runToEnd(["segments", "list", "--data-dir", data.path, "--node", name])
            #expect(listed.status == 1, "--node \(name): \(listed.output)")
            #expect(listed.errors.contains("no node \(name) under"), "\(listed.errors)")
        }
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
