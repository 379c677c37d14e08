import Foundation
import Postgres
import TestSupport
import Testing

/// `scripts/lib/pg.sh`, the local cluster behind `scripts/run` and `scripts/test`.
@Suite struct LocalClusterScriptTests {
    static let hasPostgres = FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/15/bin/initdb")

    @Test(
        "pg_local_start makes a cluster, reuses it, survives a crashed postmaster, and pg_local_stop stops it",
        .enabled(if: hasPostgres), .timeLimit(.minutes(3)))
    func lifecycle() throws {
        let directory = NSTemporaryDirectory() + "pg-script-test-" + UUID().uuidString.prefix(8)
        defer {
            _ = try? shell("pg_local_stop \(directory)")
            try? FileManager.default.removeItem(atPath: directory)
        }
        let first = try shell("pg_local_start \(directory) && echo \"$DATABASE_URL\"")
        #expect(first.status == 0, "\(first.output)")
        let url = try #require(first.output.split(separator: "\n").last.map(String.init))
        #expect(url.hasPrefix("postgresql://"))
        #expect(url.hasSuffix("/detour"))
        let connection = try Connection(url: url)
        #expect(try connection.query("select current_setting('fsync') as f").first?["f", as: String.self] == "on")
        #expect(
            try connection.query("select current_setting('listen_addresses') as l").first?["l", as: String.self]
                == "127.0.0.1")
        connection.close()

        // A second start reuses the running cluster (same URL).
        let again = try shell("pg_local_start \(directory) && echo \"$DATABASE_URL\"")
        #expect(again.output.split(separator: "\n").last.map(String.init) == url)

        // A crash (SIGKILL of the postmaster) leaves a stale postmaster.pid; start recovers.
        let pidText = try String(contentsOfFile: directory + "/postmaster.pid", encoding: .utf8)
        let pid = try #require(pidText.split(separator: "\n").first.flatMap { Int32($0) })
        kill(pid, SIGKILL)
        // No pause, neither for the postmaster to be gone nor for its orphaned backends: pg_local_start
        // waits for both itself. The killed postmaster's PID still exists for a while (dying, then a
        // zombie until its parent reaps it, which a container's PID 1 may never do), and `pg_ctl status`
        // took it for a running cluster: the start "reused" it and could not create the database.
        let recovered = try shell("pg_local_start \(directory) && echo \"$DATABASE_URL\"")
        #expect(recovered.status == 0, "\(recovered.output)")
        let newURL = try #require(recovered.output.split(separator: "\n").last.map(String.init))
        let reconnected = try Connection(url: newURL)
        #expect(try reconnected.query("select 1 as one").first?["one", as: Int.self] == 1)
        reconnected.close()

        let stopped = try shell("pg_local_stop \(directory) && pg_local_stop \(directory)")
        #expect(stopped.status == 0)
        #expect(throws: PostgresError.self) { try Connection(url: newURL + "?connect_timeout=2") }

        // A stop right after a crash has nothing to stop and says so with success (scripts/run's exit
        // trap after PostgreSQL was killed); it used to wait for the dead postmaster, then fail.
        let restarted = try shell("pg_local_start \(directory)")
        #expect(restarted.status == 0, "\(restarted.output)")
        let secondPIDText = try String(contentsOfFile: directory + "/postmaster.pid", encoding: .utf8)
        let secondPID = try #require(secondPIDText.split(separator: "\n").first.flatMap { Int32($0) })
        kill(secondPID, SIGKILL)
        let stoppedAfterCrash = try shell("pg_local_stop \(directory)")
        #expect(stoppedAfterCrash.status == 0, "\(stoppedAfterCrash.output)")
    }

    @Test(
        "TCP connections need the cluster's password, also on a cluster made when pg.sh trusted them",
        .enabled(if: hasPostgres), .timeLimit(.minutes(3)))
    func passwordRequired() throws {
        let directory = NSTemporaryDirectory() + "pg-script-test-" + UUID().uuidString.prefix(8)
        defer {
            _ = try? shell("pg_local_stop \(directory)")
            try? FileManager.default.removeItem(atPath: directory)
        }
        let started = try shell("pg_local_start \(directory) && echo \"$DATABASE_URL\"")
        #expect(started.status == 0, "\(started.output)")
        let url = try #require(started.output.split(separator: "\n").last.map(String.init))
        let password = Self.password(of: url)
        #expect(password != nil, "no password in \(url)")
        if let password {
            #expect(!started.output.dropLast(url.count).contains(password), "pg.sh printed the password")
        }
        try expectPasswordRequired(url)
        var status = stat()
        #expect(stat(directory + "/detour-password", &status) == 0 && status.st_mode & 0o077 == 0)

        // A cluster pg.sh made before (trust for TCP, no password file) is converted at its next start.
        #expect(try shell("pg_local_stop \(directory)").status == 0)
        try FileManager.default.removeItem(atPath: directory + "/detour-password")
        try "local all all trust\nhost all all 127.0.0.1/32 trust\n".write(
            toFile: directory + "/pg_hba.conf", atomically: false, encoding: .utf8)
        let converted = try shell("pg_local_start \(directory) && echo \"$DATABASE_URL\"")
        #expect(converted.status == 0, "\(converted.output)")
        let newURL = try #require(converted.output.split(separator: "\n").last.map(String.init))
        #expect(Self.password(of: newURL) != Self.password(of: url))
        try expectPasswordRequired(newURL)
    }

    @Test(
        "a running postmaster that does not answer: pg_local_start under set -e says so and fails, and starts again once it answers",
        .enabled(if: hasPostgres), .timeLimit(.minutes(3)))
    func postmasterNotAnswering() throws {
        let directory = NSTemporaryDirectory() + "pg-script-test-" + UUID().uuidString.prefix(8)
        var stoppedPID: pid_t?
        defer {
            if let stoppedPID { kill(stoppedPID, SIGCONT) }
            _ = try? shell("pg_local_stop \(directory)")
            try? FileManager.default.removeItem(atPath: directory)
        }
        #expect(try shell("pg_local_start \(directory)").status == 0)
        let pidText = try String(contentsOfFile: directory + "/postmaster.pid", encoding: .utf8)
        let pid = try #require(pidText.split(separator: "\n").first.flatMap { pid_t($0) })
        // Stopped (SIGSTOP), it is alive and answers nothing: what a long crash recovery looks like.
        kill(pid, SIGSTOP)
        stoppedPID = pid
        // Under `set -e`, as scripts/run and scripts/test call it: until 2026-12-04 the wait's status
        // ended the caller at once, silently, before the message below.
        let refused = try shell("set -e; PG_LOCAL_READY_TIMEOUT=3 pg_local_start \(directory); echo started")
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("has not answered on port"), "\(refused.output)")
        #expect(!refused.output.contains("started"))
        kill(pid, SIGCONT)
        stoppedPID = nil
        let reused = try shell("set -e; pg_local_start \(directory); echo started")
        #expect(reused.status == 0 && reused.output.contains("reusing the cluster"), "\(reused.output)")
    }

    /// `url` connects, and the same URL with any other password (what another local user has) does not.
    private func expectPasswordRequired(_ url: String) throws {
        let connection = try Connection(url: url)
        #expect(try connection.query("select 1 as one").first?["one", as: Int.self] == 1)
        connection.close()
        let scheme = "postgresql://"
        let user =
            try #require(url.dropFirst(scheme.count).split(separator: "@").first)
            .split(separator: ":").first.map(String.init) ?? ""
        let rest = try #require(url.split(separator: "@", maxSplits: 1).last)
        let wrong = scheme + user + ":not-the-password@" + rest + "?connect_timeout=5"
        #expect(throws: PostgresError.self, "a wrong password was accepted") { try Connection(url: wrong) }
    }

    /// The password in a `postgresql://user:password@host/...` URL, if any.
    private static func password(of url: String) -> String? {
        let credentials = url.dropFirst("postgresql://".count).split(separator: "@").first ?? ""
        let parts = credentials.split(separator: ":", maxSplits: 1)
        return parts.count == 2 ? String(parts[1]) : nil
    }

    /// Runs `command` after sourcing pg.sh and returns its exit status and output.
    ///
    /// posix_spawn + waitpid rather than Foundation's Process: here `Process.waitUntilExit` never
    /// returned once the command had started a postmaster that outlives it. Output goes through a
    /// file so no pipe's EOF depends on the long-lived server.
    private func shell(_ command: String) throws -> (status: Int32, output: String) {
        let log = NSTemporaryDirectory() + "pg-script-output-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: log) }
        let script = "source \(RepositoryRoot.path)/scripts/lib/pg.sh && { \(command); } >\(log) 2>&1 </dev/null"
        let words: [String] = ["/bin/bash", "-c", script]
        var arguments: [UnsafeMutablePointer<CChar>?] = []
        for word in words { arguments.append(strdup(word)) }
        arguments.append(nil)
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/bash", nil, nil, arguments, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return (exitCode, output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
