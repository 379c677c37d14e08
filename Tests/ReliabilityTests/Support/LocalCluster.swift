import Foundation
import TestSupport

/// A PostgreSQL cluster of the test's own (scripts/lib/pg.sh in a temporary directory), so the
/// outage test can stop and start it without touching the shared test cluster. Restarts keep the
/// port, so the pipeline's DATABASE_URL stays valid across the outage.
final class LocalCluster: Sendable {
    let directory: String
    let url: String
    let port: Int

    /// Initialises and starts a cluster in a fresh directory under /tmp (short: unix socket paths).
    init() throws {
        directory = "/tmp/" + chaosName("detour-chaos-pg") + "-\(UInt32.random(in: 0...UInt32.max))"
        let output = try Self.shell(
            #"source scripts/lib/pg.sh && pg_local_start "$1" >&2 && echo "$DATABASE_URL $PG_LOCAL_PORT""#, directory)
        let parts = output.split(separator: " ")
        guard parts.count == 2, let port = Int(parts[1]) else {
            throw ChaosError("could not start a dedicated PostgreSQL in \(directory): \(output)")
        }
        url = String(parts[0])
        self.port = port
    }

    /// Stops the cluster (fast shutdown: clients are disconnected).
    func stop() throws {
        _ = try Self.shell(#"source scripts/lib/pg.sh && pg_local_stop "$1""#, directory)
    }

    /// Starts it again on the same port.
    func restart() throws {
        _ = try Self.shell(
            #"source scripts/lib/pg.sh && _pg_as_owner "$PG_BIN/pg_ctl" -D "$1" -w -t 60 -l "$1/server.log" -o "-p $2 -c listen_addresses=127.0.0.1 -c unix_socket_directories='$1'" start >/dev/null"#,
            directory, String(port))
    }

    /// Stops the cluster and removes its directory.
    func destroy() {
        _ = try? stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `script` under bash in the repository root with `arguments` as $1...; returns stdout.
    @discardableResult
    static func shell(_ script: String, _ arguments: String...) throws -> String {
        let result = try ChildProcess.run(
            "/bin/bash", ["-c", "cd \"$DETOUR_REPOSITORY\" && " + script, "bash"] + arguments,
            environment: ProcessInfo.processInfo.environment.merging(["DETOUR_REPOSITORY": RepositoryRoot.path]) { $1 },
            timeout: .seconds(300))
        guard result.status == 0 else { throw ChaosError("bash failed (\(result.status)): \(result.errors)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// `base`, then the tag scripts/chaos exports for its run (`DETOUR_CHAOS_TAG`) when there is one:
/// its clean-up removes what its own tests left behind, by that name, and nothing of another run.
func chaosName(_ base: String) -> String {
    ProcessInfo.processInfo.environment["DETOUR_CHAOS_TAG"].map { base + "-" + $0 } ?? base
}
