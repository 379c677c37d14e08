import Foundation
import Glibc
import TestSupport

/// A child process started with posix_spawn, its output going to files, reaped with waitpid.
///
/// The reliability tests start, SIGKILL and wait for hundreds of processes, many at once. They do
/// not use Foundation's `Process` for that: on Linux its exit monitor occasionally never notices a
/// child that has exited (the child stays a zombie and `waitUntilExit` hangs), which turned a chaos
/// run into a hang. Here every wait is a `waitpid` on our own pid, bounded in time.
final class ChildProcess: @unchecked Sendable {
    // `status` is written only under `lock`; everything else is immutable after init.
    let pid: pid_t
    let outputPath: String
    let errorPath: String
    private let lock = NSLock()
    private var status: Int32?

    /// Starts `executable arguments...` with exactly `environment` (plus PATH and
    /// `PipelineProcess.passedOn`), stdin from /dev/null.
    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        let scratch = FileManager.default.temporaryDirectory.path + "/detour-child-\(UUID().uuidString)"
        outputPath = scratch + ".out"
        errorPath = scratch + ".err"
        var environment = PipelineProcess.passedOn.merging(environment) { $1 }
        if environment["PATH"] == nil {
            environment["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, nil, argv, envp)
        guard result == 0 else { throw ChaosError("posix_spawn \(executable): errno \(result)") }
        pid = child
    }

    /// The exit status (128 + signal for a signalled child) if it has exited; reaps it.
    var exitStatus: Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == pid {
            let signal = raw & 0x7f
            status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        } else if result < 0 && errno == ECHILD {
            status = -1  // reaped by someone else: gone, status unknown
        }
        return status
    }

    var isRunning: Bool { exitStatus == nil }

    /// Waits (polling, bounded) for the exit status; nil if still running after `timeout`.
    func wait(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = exitStatus { return status }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return exitStatus
    }

    func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Everything written to stdout so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    /// Everything written to stderr so far.
    var errors: String {
        guard let data = FileManager.default.contents(atPath: errorPath) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Waits (bounded) for a stdout line starting with `prefix`; returns the rest of it.
    func waitForLine(startingWith prefix: String, timeout: Duration) -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = output.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                return String(line.dropFirst(prefix.count))
            }
            if !isRunning { return nil }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// Runs to completion (SIGKILL after `timeout`) and returns status, stdout and stderr.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], timeout: Duration = .seconds(120)
    ) throws -> (status: Int32, output: String, errors: String) {
        let child = try ChildProcess(executable, arguments, environment: environment)
        var status = child.wait(timeout: timeout)
        if status == nil {
            child.signal(SIGKILL)
            status = child.wait(timeout: .seconds(10))
        }
        return (status ?? -1, child.output, child.errors)
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            _ = wait(timeout: .seconds(10))
        }
        unlink(outputPath)
        unlink(errorPath)
    }
}
