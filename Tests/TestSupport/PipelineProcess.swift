import Foundation
import Locking

/// The built `detour-analytics` binary run as a child process, the way operators run it: tests
/// read its standard output, signal it and wait for it, every wait bounded.
package final class PipelineProcess: Sendable {
    /// Where `scripts/test` says the binary is (`DETOUR_TEST_BINARY`), else the debug build.
    package static var binaryPath: String {
        if let path = ProcessInfo.processInfo.environment["DETOUR_TEST_BINARY"], !path.isEmpty { return path }
        return RepositoryRoot.path + "/.build/debug/detour-analytics"
    }

    private let process: Process
    private let output = TextBuffer()
    private let errors = TextBuffer()

    /// What a spawned binary inherits besides PATH: `scripts/sanitize descriptors`' preloaded
    /// close(2) check and where it reports, so the binaries the tests start are checked too.
    package static var passedOn: [String: String] {
        ProcessInfo.processInfo.environment.filter { $0.key == "LD_PRELOAD" || $0.key == "DETOUR_CLOSE_REPORTS" }
    }

    /// Starts `detour-analytics arguments...` with `environment` added to a minimal environment;
    /// `standardOutput` or `standardError`, when given, is a file the child writes to instead of the
    /// pipe read here (`/dev/full`), and what is read of that one stays empty.
    package init(
        _ arguments: [String], environment: [String: String] = [:], standardOutput: String? = nil,
        standardError: String? = nil
    ) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binaryPath)
        process.arguments = arguments
        var base = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        base.merge(Self.passedOn) { $1 }
        base.merge(environment) { $1 }
        process.environment = base
        let out = Pipe()
        let err = Pipe()
        let files = try [standardOutput, standardError].map { path in
            try path.map { path in
                guard let file = FileHandle(forWritingAtPath: path) else {
                    throw Failure(description: "cannot open \(path)")
                }
                return file
            }
        }
        process.standardOutput = files[0] ?? out
        process.standardError = files[1] ?? err
        for (pipe, buffer, given) in [(out, output, files[0]), (err, errors, files[1])] {
            if given != nil {
                buffer.append(Data())  // nothing to read: at its end already
                continue
            }
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                buffer.append(data)
                if data.isEmpty { handle.readabilityHandler = nil }  // end of file
            }
        }
        try process.run()
    }

    /// Everything printed to standard output so far.
    package var standardOutput: String { output.text }
    /// Everything printed to standard error so far (the structured log).
    package var standardError: String { errors.text }
    /// The process id.
    package var pid: Int32 { process.processIdentifier }
    /// Whether it still runs.
    package var isRunning: Bool { process.isRunning }

    /// Waits until standard output contains a line starting with `prefix` and returns the rest of it.
    package func waitForLine(startingWith prefix: String, timeout: Duration = .seconds(30)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = standardOutput.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                return String(line.dropFirst(prefix.count))
            }
            if !process.isRunning { return nil }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// Runs the binary to completion (bounded) and returns its status and output.
    package static func runToEnd(
        _ arguments: [String], environment: [String: String] = [:], standardOutput: String? = nil,
        timeout: Duration = .seconds(60)
    ) throws -> (status: Int32, output: String, errors: String) {
        let child = try PipelineProcess(arguments, environment: environment, standardOutput: standardOutput)
        let status =
            child.waitForExit(timeout: timeout)
            ?? {
                child.signal(SIGKILL)
                return child.waitForExit(timeout: .seconds(5)) ?? -1
            }()
        return (status, child.standardOutput, child.standardError)
    }

    /// Registers an app with `apps create --id ID --name NAME --json` (and `extra` flags) and returns
    /// its JSON: `app_id`, `publishable_key`, `secret_key`.
    /// - Throws: `Failure` with the command's standard error when it does not exit 0 with that JSON.
    package static func createApp(
        id: String, name: String, extra: [String] = [], environment: [String: String]
    ) throws -> [String: String] {
        let created = try runToEnd(
            ["apps", "create", "--id", id, "--name", name] + extra + ["--json"], environment: environment)
        guard created.status == 0,
            let keys = try? JSONSerialization.jsonObject(with: Data(created.output.utf8)) as? [String: String]
        else { throw Failure(description: "apps create \(id) failed (\(created.status)): \(created.errors)") }
        return keys
    }

    /// A child that did not do what a helper needed.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Sends `signal` (SIGTERM, SIGINT, SIGKILL).
    package func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for the exit status, at most `timeout`; nil if it is still running. Once it has
    /// exited, also waits (at most 10 s more) until both pipes are read to their end, so the
    /// output read afterwards is all of it, however late the readability handlers run.
    package func waitForExit(timeout: Duration = .seconds(30)) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        guard !process.isRunning else { return nil }
        let drained = ContinuousClock.now + .seconds(10)
        while !(output.ended && errors.ended) && ContinuousClock.now < drained { Thread.sleep(forTimeInterval: 0.005) }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Bytes collected from a pipe by its readability handler and read by the test thread: kept as
/// bytes and decoded whole, so a character split between two reads stays one character.
private final class TextBuffer: Sendable {
    private let state = Locked((bytes: Data(), ended: false))

    /// Adds a read; an empty one is the end of the pipe.
    func append(_ data: Data) {
        state.withLock { state in
            if data.isEmpty { state.ended = true } else { state.bytes.append(data) }
        }
    }

    /// Everything read so far, as UTF-8 text.
    var text: String { String(decoding: state.withLock { $0.bytes }, as: UTF8.self) }
    /// Whether the pipe's end was read.
    var ended: Bool { state.withLock { $0.ended } }
}
