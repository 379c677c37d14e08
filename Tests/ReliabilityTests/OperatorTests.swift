import EventLog
import EventModel
import Foundation
import Postgres
import TestSupport
import Testing

/// What an operator meets running the binary: refusals at start-up that say what is wrong, and the
/// `segments` tools on a real damaged segment.
@Suite(.serialized)
struct OperatorTests {
    @Test(
        "a data directory that is a file, a port in use and a second instance on one data directory are refused plainly"
    )
    func startupRefusals() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-ops-start")
        let environment = ["DATABASE_URL": database.url]
        let app = try AppKeys.create(id: "ops-start", environment: environment)

        // A file where the data directory should be: one line naming it (was Foundation's NSError dump).
        let file = data.path + "/not-a-directory"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let onFile = try Binary.run(
            ["serve", "--data-dir", file, "--http-addr", "127.0.0.1:0"], environment: environment)
        #expect(onFile.status == 1)
        #expect(
            onFile.errors.contains("error: data directory \(file) exists and is not a directory"), "\(onFile.errors)")
        #expect(!onFile.errors.contains("NSCocoaErrorDomain"))

        // --max-disk 0 is "no cap" (it was a cap of 0 bytes: every event 503 log_unavailable).
        let first = try ServeProcess(
            environment: environment, arguments: ["--data-dir", data.path + "/one", "--max-disk", "0"])
        let accepted = RawHTTP.post(
            port: first.port, "/api/analytics/event", key: app.publishable, app: app.id,
            body: Array(Self.event("ops-1").utf8))
        #expect(accepted?.status == 200, "\(accepted?.text ?? "no answer")")

        // The same port: the error names the address.
        let samePort = try Binary.run(
            ["serve", "--data-dir", data.path + "/two", "--http-addr", "127.0.0.1:\(first.port)"],
            environment: environment)
        #expect(samePort.status == 1)
        #expect(
            samePort.errors.contains("bind 127.0.0.1:\(first.port) failed: Address already in use"),
            "\(samePort.errors)")

        // The same data directory: refused before it touches the log; the first instance serves on.
        let sameData = try Binary.run(
            ["serve", "--data-dir", data.path + "/one", "--http-addr", "127.0.0.1:0"], environment: environment)
        #expect(sameData.status == 1)
        #expect(
            sameData.errors.contains("another process is writing to \(data.path)/one/segments/node-1"),
            "\(sameData.errors)")
        let after = RawHTTP.post(
            port: first.port, "/api/analytics/event", key: app.publishable, app: app.id,
            body: Array(Self.event("ops-2").utf8))
        #expect(after?.status == 200, "\(after?.text ?? "no answer")")
        #expect(first.stop() == 0)

        let verified = try Binary.run(
            ["segments", "verify", "--data-dir", data.path + "/one"], environment: environment)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("2 records verified"), "\(verified.output)")
    }

    @Test("segments list, inspect, verify --data-dir and replay name a damaged frame in a real segment")
    func damagedSegment() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-ops-damaged")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let app = try AppKeys.create(id: "ops-damaged", environment: environment)

        // Three requests one after another: three frames in one segment.
        let serve = try ServeProcess(environment: environment, arguments: [])
        for id in ["dmg-1", "dmg-2", "dmg-3"] {
            let answer = RawHTTP.post(
                port: serve.port, "/api/analytics/event", key: app.publishable, app: app.id,
                body: Array(Self.event(id).utf8))
            #expect(answer?.status == 200, "\(answer?.text ?? "no answer")")
        }
        #expect(serve.stop() == 0)

        let segment = data.path + "/segments/node-1/00000000000000000001.seg"
        let handle = try #require(FileHandle(forUpdatingAtPath: segment))
        try handle.seek(toOffset: 100)  // inside the first frame's compressed body
        try handle.write(contentsOf: Data([0xFF, 0xFF, 0xFF]))
        try handle.close()

        let verify = try Binary.run(["segments", "verify", "--data-dir", data.path], environment: [:])
        #expect(verify.status == 1, "\(verify.output) \(verify.errors)")
        #expect(verify.output.contains("DAMAGED \(segment) offset 0"), "\(verify.output)")
        // The frame's metadata passed its own checksum: what the damage cost is named (it said only
        // the offset, and inspect showed 0 records for the frame).
        #expect(verify.output.contains("body checksum mismatch; 1 record lost from sequence "), "\(verify.output)")
        let list = try Binary.run(["segments", "list"], environment: environment)
        #expect(list.status == 0)
        #expect(list.output.contains("1 damaged"), "\(list.output)")
        let inspect = try Binary.run(["segments", "inspect", segment], environment: [:])
        #expect(inspect.output.contains("DAMAGED: body checksum mismatch"), "\(inspect.output)")

        // Replay loads the good frames and says it skipped one (it used to report only "2 records read").
        let replay = try Binary.run(["segments", "replay", "--from", "1"], environment: environment)
        #expect(replay.status == 0, "\(replay.errors)")
        #expect(replay.output.contains("2 records read"), "\(replay.output)")
        #expect(replay.output.contains("1 damaged frame skipped"), "\(replay.output)")
        #expect(
            replay.errors.contains("log.frame_damaged segment.path=\(segment) segment.offset=0"), "\(replay.errors)")
        #expect(replay.errors.contains("body checksum mismatch (1 record, sequence "), "\(replay.errors)")
        #expect(!replay.errors.contains("replay: warning: no record"), "\(replay.errors)")
        // A --from beyond the newest segment (1000 for 100) reads nothing, and says so.
        let beyond = try Binary.run(["segments", "replay", "--from", "1000"], environment: environment)
        #expect(beyond.status == 0, "\(beyond.errors)")
        #expect(beyond.output.contains("0 records read"), "\(beyond.output)")
        #expect(
            beyond.errors.contains(
                "replay: warning: no record at or after segment 1000; is --from beyond the newest segment?"),
            "\(beyond.errors)")
        let connection = try database.connect()
        defer { connection.close() }
        let rows = try connection.query("SELECT event_id FROM events WHERE app_id = \(app.id) ORDER BY event_id")
        #expect(try rows.map { try $0["event_id", as: String.self] } == ["dmg-2", "dmg-3"])

        // The aggregator from cron says so on its summary (stdout, what cron mails), not only in the log.
        let aggregate = try Binary.run(["aggregate", "--once"], environment: environment)
        #expect(aggregate.status == 0, "\(aggregate.errors)")
        #expect(aggregate.output.contains("aggregate: warning: 1 damaged frame skipped"), "\(aggregate.output)")

        // A record that does not decode (a log written by another program, or before a bound) is
        // skipped too, and the summary says so as well (it was only on stderr).
        var configuration = LogConfiguration(directory: data.path + "/segments", node: "node-1")
        configuration.groupCommitDelay = .zero
        let writer = try LogWriter(configuration: configuration)
        try writer.append([Array(#"{"v":1,"id":"no-app-no-kind"}"#.utf8)])
        writer.close()
        let skipped = try Binary.run(["aggregate", "--once"], environment: environment)
        #expect(skipped.status == 0, "\(skipped.errors)")
        #expect(
            skipped.output.contains("aggregate: warning: 1 record could not be decoded and was skipped, not loaded"),
            "\(skipped.output)")
        #expect(skipped.errors.contains("records.undecodable"), "\(skipped.errors)")
    }

    @Test("migrate says what to do when an app's time zone is no longer known and sql/076 cannot read it")
    func migrateUnknownZone() throws {
        let database = try TestDatabase.make(migrate: false)
        defer { database.drop() }
        let environment = ["DATABASE_URL": database.url]
        // A database migrated through 075, as before the upgrade, whose app's zone has since gone.
        let old = try TemporaryDirectory(prefix: "detour-ops-sql075")
        try copyMigrations(into: old.path) { $0 < "076" }
        let before = try Binary.run(["migrate", "--sql-dir", old.path], environment: environment)
        #expect(before.status == 0, "\(before.errors)")
        let connection = try database.connect()
        defer { connection.close() }
        try connection.execute("ALTER TABLE apps DROP CONSTRAINT apps_time_zone_known")
        try connection.execute("INSERT INTO apps (id, name, time_zone) VALUES ('gone', 'Gone', 'Gone/Zone')")
        try connection.execute("INSERT INTO rollup_events_daily VALUES ('gone', '2026-06-01', 'event', 'x', 1, 1)")

        let upgrade = try Binary.run(["migrate", "--sql-dir", RepositoryRoot.path + "/sql"], environment: environment)
        #expect(upgrade.status != 0)
        #expect(
            upgrade.errors.contains("migrate: hint: an app's reporting time zone is not known"), "\(upgrade.errors)")
        // Given another zone, the upgrade goes through.
        try connection.execute("UPDATE apps SET time_zone = 'UTC' WHERE id = 'gone'")
        let again = try Binary.run(["migrate", "--sql-dir", RepositoryRoot.path + "/sql"], environment: environment)
        #expect(again.status == 0, "\(again.errors)")
    }

    @Test(
        "migrate gives up a lock another session holds after --lock-timeout and --lock-attempts, says so, and exits 69"
    )
    func migrateLockTimeout() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let environment = ["DATABASE_URL": database.url]
        let directory = try TemporaryDirectory(prefix: "detour-ops-sql-lock")
        try copyMigrations(into: directory.path)
        try "ALTER TABLE apps ADD COLUMN lock_probe integer;\n".write(
            toFile: directory.path + "/999_lock_probe.sql", atomically: true, encoding: .utf8)
        let holder = try database.connect()
        defer { holder.close() }
        try holder.unsafeSQL("BEGIN")
        _ = try holder.query("select count(*) as n from apps")

        let refused = try Binary.run(
            ["migrate", "--sql-dir", directory.path, "--lock-timeout", "100ms", "--lock-attempts", "2"],
            environment: environment)
        #expect(refused.status == 69, "\(refused.errors)")
        #expect(
            refused.errors.contains(
                "migrate: 999_lock_probe could not take a lock within 0.1 seconds (attempt 1 of 2)"),
            "\(refused.errors)")
        #expect(refused.errors.contains("could not take its locks"), "\(refused.errors)")
        // The variable sets the timeout; a bad value is refused under its name.
        let bad = try Binary.run(
            ["migrate", "--sql-dir", directory.path],
            environment: environment.merging(["DETOUR_MIGRATE_LOCK_TIMEOUT": "soon"]) { $1 })
        #expect(bad.status == 64)
        #expect(bad.errors.contains("DETOUR_MIGRATE_LOCK_TIMEOUT must be a duration"), "\(bad.errors)")
        // Beyond what PostgreSQL's lock_timeout holds: a usage error, not a failed migration (exit 1).
        let long = try Binary.run(
            ["migrate", "--sql-dir", directory.path, "--lock-timeout", "25d"], environment: environment)
        #expect(long.status == 64)
        #expect(long.errors.contains("--lock-timeout must be 0 or from 1ms to 24d, got 25d"), "\(long.errors)")

        try holder.unsafeSQL("COMMIT")
        let applied = try Binary.run(
            ["migrate", "--sql-dir", directory.path, "--lock-timeout", "100ms"], environment: environment)
        #expect(applied.status == 0, "\(applied.errors)")
        #expect(applied.output.contains("migrate: applied 999_lock_probe"), "\(applied.output)")
    }

    @Test("report daily over a database with no apps says so on stderr (exit 0: nothing failed)")
    func dailyWithoutApps() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let out = try TemporaryDirectory(prefix: "detour-ops-noapps")
        let daily = try Binary.run(
            ["report", "daily", "--date", "2026-06-01", "--out", out.path], environment: ["DATABASE_URL": database.url])
        #expect(daily.status == 0, "\(daily.errors)")
        #expect(daily.output.isEmpty, "\(daily.output)")
        #expect(
            daily.errors.contains("report daily: warning: the database has no apps, nothing was written"),
            "\(daily.errors)")
    }

    @Test("aggregate --once loads the other nodes when one node's log cannot be read, names it, and exits 1")
    func unreadableNode() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-ops-unreadable")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let app = try AppKeys.create(id: "ops-unreadable", environment: environment)
        for node in ["node-1", "node-2"] {
            var configuration = LogConfiguration(directory: data.path + "/segments", node: node)
            configuration.groupCommitDelay = .zero
            let writer = try LogWriter(configuration: configuration)
            var envelope = Envelope(
                id: "unreadable-" + node, app: app.id, kind: .event, time: Timestamp(iso8601: "2026-06-01T10:00:00Z")!,
                receivedAt: Timestamp(iso8601: "2026-06-01T10:00:00Z")!)
            envelope.name = "ops"
            envelope.device = "d1"
            try writer.append([envelope.encoded()])
            writer.close()
        }
        // node-2's segment cannot be read (a directory in its place fails to read with EISDIR).
        let segment = data.path + "/segments/node-2/00000000000000000001.seg"
        try FileManager.default.removeItem(atPath: segment)
        try FileManager.default.createDirectory(atPath: segment, withIntermediateDirectories: false)

        let aggregate = try Binary.run(["aggregate", "--once"], environment: environment)
        #expect(aggregate.status == 1, "\(aggregate.output) \(aggregate.errors)")
        let line = "aggregate: error: the log of node node-2 could not be read"
        #expect(aggregate.output.contains(line), "\(aggregate.output)")
        #expect(aggregate.errors.contains("log.unreadable node=node-2"), "\(aggregate.errors)")
        let connection = try database.connect()
        defer { connection.close() }
        let rows = try connection.query("SELECT event_id FROM events WHERE app_id = \(app.id)")
        #expect(try rows.map { try $0["event_id", as: String.self] } == ["unreadable-node-1"])
    }

    @Test("aggregate --once names an app whose rollups are held for an unknown time zone; report daily exits 78 for it")
    func heldRollups() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-ops-zone")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let app = try AppKeys.create(id: "ops-zone", environment: environment)
        let serve = try ServeProcess(environment: environment, arguments: [])
        let answer = RawHTTP.post(
            port: serve.port, "/api/analytics/event", key: app.publishable, app: app.id,
            body: Array(Self.event("zone-1").utf8))
        #expect(answer?.status == 200, "\(answer?.text ?? "no answer")")
        #expect(serve.stop() == 0)
        // A name the server knew when the app was set up and no longer does (the check refuses it now).
        let connection = try database.connect()
        defer { connection.close() }
        try connection.execute("ALTER TABLE apps DROP CONSTRAINT apps_time_zone_known")
        try connection.execute("UPDATE apps SET time_zone = 'Gone/Zone' WHERE id = \(app.id)")

        let aggregate = try Binary.run(["aggregate", "--once"], environment: environment)
        #expect(aggregate.status == 0, "\(aggregate.errors)")
        #expect(aggregate.output.contains("1 events"), "\(aggregate.output)")
        #expect(
            aggregate.output.contains(
                "aggregate: warning: rollups of app ops-zone held back, 3 days queued: PostgreSQL does not know its time"
                    + " zone \"Gone/Zone\""), "\(aggregate.output)")
        #expect(
            aggregate.errors.contains("rollups.held app=ops-zone time_zone=Gone/Zone days=3"), "\(aggregate.errors)")

        let out = try TemporaryDirectory(prefix: "detour-ops-zone-out")
        let daily = try Binary.run(
            ["report", "daily", "--date", "2026-06-01", "--out", out.path, "--allow-partial"], environment: environment)
        #expect(daily.status == 78, "\(daily.output) \(daily.errors)")
        #expect(
            daily.errors.contains(#"app ops-zone's time zone "Gone/Zone" is not known to PostgreSQL"#),
            "\(daily.errors)")
    }

    @Test("serve's /metrics carries the process metrics, and they agree with what the kernel says of the process")
    func processMetrics() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-ops-metrics")
        let environment = ["DATABASE_URL": database.url]
        let serve = try ServeProcess(environment: environment, arguments: ["--data-dir", data.path])
        defer { _ = serve.stop() }
        let pid = serve.process.pid

        func scrape() throws -> [String: Double] { try #require(RawHTTP.metrics(port: serve.port), "no 200 /metrics") }
        /// A field of /proc/PID/status, in KiB or as a count.
        func status(_ field: String) throws -> Double {
            let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(field + ":") })
            return try #require(Double(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]))
        }

        let metrics = try scrape()
        for name in [
            "process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
            "process_start_time_seconds", "process_open_fds", "process_max_fds", "process_threads",
        ] {
            #expect(metrics[name] != nil, "\(name) missing")
        }
        // The heap figures are glibc's: absent where a sanitizer's runtime serves malloc (the
        // binary is built as this test process is, so where malloc resolves here answers for both).
        let glibc = Allocator.isGlibc
        #expect((metrics["malloc_in_use_bytes"] != nil) == glibc, "glibc malloc: \(glibc)")
        #expect((metrics["malloc_held_bytes"] != nil) == glibc, "glibc malloc: \(glibc)")
        // The serve process is idle between the scrape and these reads, but its timers run on
        // libdispatch threads, which come and go (each with a stack mapping): hence the margins,
        // far inside what a wrong field or unit would be off by (pages, KiB: 1,000x or more).
        let openFDs = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        #expect(abs((metrics["process_open_fds"] ?? 0) - Double(openFDs)) <= 2, "\(openFDs) in /proc/\(pid)/fd")
        let threads = try status("Threads")
        #expect(abs((metrics["process_threads"] ?? 0) - threads) <= 4, "Threads \(threads)")
        let resident = try status("VmRSS") * 1024
        #expect(abs((metrics["process_resident_memory_bytes"] ?? 0) - resident) <= resident / 4, "VmRSS \(resident)")
        let virtual = try status("VmSize") * 1024
        #expect(abs((metrics["process_virtual_memory_bytes"] ?? 0) - virtual) <= virtual / 4, "VmSize \(virtual)")
        if let inUse = metrics["malloc_in_use_bytes"], let held = metrics["malloc_held_bytes"] {
            #expect(inUse > 0 && inUse <= held, "in use \(inUse), held \(held)")
        }
        // Started within the test's own lifetime, which is after the machine booted.
        let started = try #require(metrics["process_start_time_seconds"])
        let now = Date().timeIntervalSince1970
        #expect(started <= now + 1 && started >= now - ProcessInfo.processInfo.systemUptime, "\(started) vs \(now)")
        #expect((metrics["process_max_fds"] ?? 0) >= Double(openFDs))

        // The CPU counter is the kernel's: between two reads of /proc/PID/stat taken around a scrape,
        // after some work (each refused request costs the server a little CPU).
        func kernelCPUSeconds() throws -> Double {
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
            return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
        for index in 0..<300 {
            _ = RawHTTP.post(
                port: serve.port, "/api/analytics/event", key: "pk_unknown", app: "none",
                body: Array(Self.event("cpu-\(index)").utf8))
        }
        let before = try kernelCPUSeconds()
        let cpu = try #require(try scrape()["process_cpu_seconds_total"])
        let after = try kernelCPUSeconds()
        #expect(before <= cpu && cpu <= after, "kernel \(before)...\(after), metric \(cpu)")
        #expect(cpu >= (metrics["process_cpu_seconds_total"] ?? .infinity), "a counter went down")
    }

    @Test("an event from a device whose clock says 1970 is loaded without a 1970 partition, and aggregate says so")
    func resetClockStaysInDefaultPartition() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-ops-clock")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let app = try AppKeys.create(id: "ops-clock", environment: environment)
        let serve = try ServeProcess(environment: environment, arguments: [])
        let now = ISO8601DateFormatter().string(from: Date())
        for (id, time) in [("reset", "1970-01-01T00:00:07.000Z"), ("fine", now)] {
            let answer = RawHTTP.post(
                port: serve.port, "/api/analytics/event", key: app.publishable, app: app.id,
                body: Array(Self.event(id, timestamp: time).utf8))
            #expect(answer?.status == 200, "\(answer?.text ?? "no answer")")
        }
        #expect(serve.stop() == 0)

        let aggregate = try Binary.run(["aggregate", "--once"], environment: environment)
        #expect(aggregate.status == 0, "\(aggregate.errors)")
        #expect(aggregate.output.contains("2 events, "), "\(aggregate.output)")
        #expect(
            aggregate.output.contains(
                "aggregate: 1 row dated outside the partition window"
                    + " (in the default partition unless the day already had one)"),
            "\(aggregate.output)")
        let connection = try database.connect()
        defer { connection.close() }
        let placed = try connection.query(
            "SELECT event_id, tableoid::regclass::text AS part FROM events WHERE app_id = \(app.id) ORDER BY 1")
        #expect(try placed.map { try $0["event_id", as: String.self] } == ["fine", "reset"])
        #expect(try placed[1]["part", as: String.self] == "events_default")
        #expect(try placed[0]["part", as: String.self].hasPrefix("events_p20"))
        let stray = try connection.query("SELECT to_regclass('events_p19700101')::text AS part")
        #expect(try stray[0]["part", as: String?.self] == nil)
    }

    @Test("traffic of every kind leaves no descriptor open: a second round of it ends with as many as the first")
    func noDescriptorLeak() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-ops-fds")
        let environment = ["DATABASE_URL": database.url]
        let app = try AppKeys.create(id: "ops-fds", environment: environment)
        // Small segments, so each round rolls several (files opened, sealed, closed).
        let serve = try ServeProcess(
            environment: environment,
            arguments: ["--data-dir", data.path, "--segment-bytes", "64KiB", "--max-body", "512KiB"])
        defer { _ = serve.stop() }
        let descriptors = "/proc/\(serve.process.pid)/fd"

        func round(_ number: Int) {
            // Random ids, so the frames do not compress to nothing and the segments roll.
            let batch = (0..<1000).map { _ in Self.event(UUID().uuidString + UUID().uuidString) }.joined(separator: ",")
            for index in 0..<40 {  // accepted events, one connection each; a batch every tenth
                let body = index % 10 == 0 ? "{\"batch\":[\(batch)]}" : Self.event("fd-\(number)-single-\(index)")
                let answer = RawHTTP.post(
                    port: serve.port, index % 10 == 0 ? "/api/analytics/batch" : "/api/analytics/event",
                    key: app.publishable, app: app.id, body: Array(body.utf8))
                #expect(answer?.status == 200, "\(answer?.text ?? "no answer")")
            }
            for _ in 0..<10 {  // refused: a bad key, a body over --max-body, a body that is not JSON (dead-lettered)
                let badKey = RawHTTP.post(port: serve.port, "/api/analytics/event", key: "pk_no", app: app.id, body: [])
                #expect(badKey?.status == 401)
                let large = RawHTTP.post(
                    port: serve.port, "/api/analytics/event", key: app.publishable, app: app.id,
                    body: [UInt8](repeating: UInt8(ascii: " "), count: 600 << 10))
                #expect(large?.status == 413)
                let notJSON = RawHTTP.post(
                    port: serve.port, "/api/analytics/event", key: app.publishable, app: app.id, body: Array("{".utf8))
                #expect(notJSON?.status == 400)
            }
            let headers = [
                ("Authorization", "Bearer \(app.publishable)"), ("X-App-ID", app.id),
                ("Content-Type", "application/json"), ("Content-Length", "500"),
            ]
            let cutHead = Array("POST /api/analytics/event HTTP/1.1\r\nHost: x".utf8)
            let cutBody = RawHTTP.request(
                "POST", "/api/analytics/event", headers: headers, body: Array("{\"event_name\":".utf8),
                contentLength: false)
            for path in ["/metrics", "/readyz", "/healthz", "/metrics"] {  // /metrics reads /proc each time
                let answer = RawHTTP.exchange(port: serve.port, RawHTTP.request("GET", path))
                #expect(answer?.status == 200, "\(path): \(answer?.text.prefix(200) ?? "no answer")")
            }
            for _ in 0..<20 {  // clients that go away: mid-head, and mid-body
                for bytes in [cutHead, cutBody] {
                    if let fd = RawHTTP.connect(port: serve.port) {
                        _ = RawHTTP.send(fd, bytes)
                        close(fd)
                    }
                }
            }
        }
        /// Open descriptors once the server has noticed every closed connection: the fewest seen in
        /// up to 3 s of looking (a key refresh can hold a PostgreSQL socket for a moment), or the
        /// first count at or below `target`, looked for up to 60 s (a loaded machine may take
        /// seconds to close round 2's connections: 3 s could fail a server without a leak).
        func settled(target: Int = 0) throws -> Int {
            var fewest = Int.max
            for _ in 0..<(target == 0 ? 30 : 600) where fewest > target {
                fewest = min(fewest, try FileManager.default.contentsOfDirectory(atPath: descriptors).count)
                Thread.sleep(forTimeInterval: 0.1)
            }
            return fewest
        }

        round(1)  // the first opens what is opened once: the dead-letter log, the segments seen so far
        let first = try settled()
        round(2)
        let second = try settled(target: first)
        #expect(second <= first, "open descriptors after round 1: \(first), after round 2: \(second)")
        let segments = try FileManager.default.contentsOfDirectory(atPath: data.path + "/segments/node-1")
        #expect(segments.filter { $0.hasSuffix(".seg") }.count >= 4, "segments rolled: \(segments)")
    }

    static func event(_ id: String, timestamp: String = "2026-06-01T10:20:30.123Z") -> String {
        #"{"event_name":"ops","event_id":"\#(id)","timestamp":"\#(timestamp)","platform":"ios","#
            + #""device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
    }

    /// Copies the repository's migration files whose names `include` takes into `directory`.
    private func copyMigrations(into directory: String, _ include: (String) -> Bool = { _ in true }) throws {
        for file in try FileManager.default.contentsOfDirectory(atPath: RepositoryRoot.path + "/sql")
        where file.hasSuffix(".sql") && include(file) {
            try FileManager.default.copyItem(
                atPath: RepositoryRoot.path + "/sql/" + file, toPath: directory + "/" + file)
        }
    }
}
