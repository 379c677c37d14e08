import Foundation
import Glibc
import TestSupport
import Testing

/// `detour-analytics serve` on an ephemeral port (no aggregator of its own: a test runs
/// `aggregate --once` itself), stopped with SIGTERM.
final class ServeProcess {
    let process: ChildProcess
    let port: Int

    init(environment: [String: String], arguments: [String] = []) throws {
        process = try ChildProcess(
            PipelineProcess.binaryPath, ["serve", "--http-addr", "127.0.0.1:0"] + arguments, environment: environment)
        guard let address = process.waitForLine(startingWith: "listening on ", timeout: .seconds(60)),
            let port = address.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
        else {
            process.signal(SIGKILL)
            _ = process.wait(timeout: .seconds(10))
            throw ChaosError("serve did not start: \(process.errors.suffix(2000))")
        }
        self.port = port
    }

    func post(_ path: String, key: String, app: String, body: String, headers: [(String, String)] = []) throws
        -> RawHTTP.Response
    {
        try #require(
            RawHTTP.post(port: port, path, key: key, app: app, body: Array(body.utf8), headers: headers, timeout: 30),
            "no answer to \(path)")
    }

    /// SIGTERM; the exit status, or nil when it had to be killed.
    func stop() -> Int32? {
        process.signal(SIGTERM)
        if let status = process.wait(timeout: .seconds(30)) { return status }
        process.signal(SIGKILL)
        _ = process.wait(timeout: .seconds(10))
        return nil
    }
}
