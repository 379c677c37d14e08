import Foundation
import Locking
import TestSupport

/// The `detour-analytics` binary under test (`DETOUR_TEST_BINARY`, else the debug build).
enum Binary {
    /// Runs `detour-analytics arguments...` to completion (bounded) with `environment`.
    static func run(
        _ arguments: [String], environment: [String: String], timeout: Duration = .seconds(120)
    ) throws -> (status: Int32, output: String, errors: String) {
        try ChildProcess.run(PipelineProcess.binaryPath, arguments, environment: environment, timeout: timeout)
    }
}

/// One app with its keys, created with `detour-analytics apps create --json`.
struct AppKeys: Sendable {
    var id: String
    var publishable: String
    var secret: String

    /// `timeZone`: the app's reporting time zone (`--time-zone`), UTC when nil.
    static func create(id: String, timeZone: String? = nil, environment: [String: String]) throws -> AppKeys {
        let zone = timeZone.map { ["--time-zone", $0] } ?? []
        let created = try Binary.run(
            ["apps", "create", "--id", id, "--name", "Reliability \(id)", "--json"] + zone, environment: environment,
            timeout: .seconds(120))
        guard created.status == 0,
            let keys = try JSONSerialization.jsonObject(with: Data(created.output.utf8)) as? [String: String],
            let publishable = keys["publishable_key"], let secret = keys["secret_key"]
        else { throw ChaosError("apps create \(id) failed (\(created.status)): \(created.errors)") }
        return AppKeys(id: id, publishable: publishable, secret: secret)
    }
}

/// A failure of the harness itself (not of the system under test).
struct ChaosError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `detour-analytics run` that a test starts, kills and restarts on the same data dir and database.
final class RunningPipeline: Sendable {
    let environment: [String: String]
    let arguments: [String]
    private let current = Locked<(process: ChildProcess?, port: Int)>((nil, 0))
    /// Everything the pipeline printed to stderr across all its lives.
    private let logs = Locked("")

    init(environment: [String: String], extraArguments: [String] = []) {
        self.environment = environment
        self.arguments = ["run", "--http-addr", "127.0.0.1:0", "--load-interval", "200ms"] + extraArguments
    }

    /// The port of the live process (0 while it is down).
    var port: Int { current.withLock { $0.port } }

    /// Starts a new process and waits (bounded) for its listening line.
    func start() throws {
        let process = try ChildProcess(PipelineProcess.binaryPath, arguments, environment: environment)
        guard let address = process.waitForLine(startingWith: "listening on ", timeout: .seconds(120)),
            let port = address.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
        else {
            let log = process.errors
            process.signal(SIGKILL)
            _ = process.wait(timeout: .seconds(10))
            throw ChaosError("the pipeline did not start; log: \(log.suffix(3000))")
        }
        current.withLock { $0 = (process, port) }
    }

    /// SIGKILLs the live process and waits for it to be gone.
    func kill() {
        let process = current.withLock { state -> ChildProcess? in
            let process = state.process
            state = (nil, 0)
            return process
        }
        guard let process else { return }
        process.signal(SIGKILL)
        _ = process.wait(timeout: .seconds(30))
        logs.withLock { $0 += process.errors }
    }

    /// SIGTERMs the live process; returns its exit status (nil if it had to be killed).
    @discardableResult
    func stop() -> Int32? {
        let process = current.withLock { state -> ChildProcess? in
            let process = state.process
            state = (nil, 0)
            return process
        }
        guard let process else { return nil }
        process.signal(SIGTERM)
        let status = process.wait(timeout: .seconds(60))
        if status == nil {
            process.signal(SIGKILL)
            _ = process.wait(timeout: .seconds(10))
        }
        logs.withLock { $0 += process.errors }
        return status
    }

    /// The stderr of every past life plus the current one's.
    var log: String {
        let live = current.withLock { $0.process?.errors } ?? ""
        return logs.withLock { $0 } + live
    }
}

/// What `aggregate --once` left in PostgreSQL: how many rows each event id has.
enum Loaded {
    /// Runs `aggregate --once` (bounded, retried a few times) so every durable event is loaded.
    static func drain(environment: [String: String]) throws {
        var last = ""
        for _ in 0..<5 {
            let result = try Binary.run(["aggregate", "--once"], environment: environment, timeout: .seconds(300))
            if result.status == 0 { return }
            last = result.errors
            Thread.sleep(forTimeInterval: 1)
        }
        throw ChaosError("aggregate --once failed: \(last.suffix(3000))")
    }
}
