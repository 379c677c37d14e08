import Foundation
import TestSupport
import Testing

extension PipelineProcess {
    /// `serve` on an ephemeral port of 127.0.0.1 with `data` as its data directory, returned once its
    /// `/readyz` answered 200, with that port; `standardError`, when given, is the file its log goes to.
    static func readyServe(
        database: TestDatabase, data: TemporaryDirectory, standardError: String? = nil
    ) throws -> (serve: PipelineProcess, port: String) {
        let serve = try PipelineProcess(
            ["serve", "--http-addr", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["DATABASE_URL": database.url], standardError: standardError)
        let port = try #require(serve.waitForLine(startingWith: "listening on http://127.0.0.1:"))
        #expect(try HTTP.get("http://127.0.0.1:\(port)/readyz").status == 200)
        return (serve, port)
    }
}
