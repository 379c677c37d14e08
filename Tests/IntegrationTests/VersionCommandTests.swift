import Foundation
import TestSupport
import Testing

@testable import detour_analytics

/// `detour-analytics --version`: what an operator compares with a release and a database's schema.
@Suite
struct VersionCommandTests {
    @Test("--version and version print the version and the newest migration of sql/ on one line, exit 0")
    func versionLine() throws {
        let expected = try Self.expectedLine()
        // The sql/ found as migrate finds it (the checkout above the binary), and the one named.
        let cases = [(["--version"], [:]), (["version"], ["DETOUR_SQL_DIR": RepositoryRoot.path + "/sql"])]
        for (arguments, environment) in cases {
            let result = try PipelineProcess.runToEnd(arguments, environment: environment)
            #expect(result.status == 0, "\(arguments): \(result.errors)")
            #expect(result.output == expected, "\(arguments)")
            #expect(result.errors.isEmpty, "\(arguments): \(result.errors)")
        }
    }

    @Test("--version run by its name on PATH from another directory finds the sql/ beside the binary")
    func versionThroughPath() throws {
        // The README runs `detour-analytics migrate`: the shell finds it on PATH, and argv[0] is then
        // only the name, which taken as a path named the working directory's sql/ (none here).
        let elsewhere = try TemporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["detour-analytics", "--version"]
        process.currentDirectoryURL = URL(fileURLWithPath: elsewhere.path)
        let binDirectory = URL(fileURLWithPath: PipelineProcess.binaryPath).deletingLastPathComponent().path
        process.environment = ["PATH": binDirectory + ":/usr/bin:/bin"].merging(PipelineProcess.passedOn) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text == (try Self.expectedLine()))
    }

    /// The line `--version` prints with the repository's sql/.
    static func expectedLine() throws -> String {
        let newest = try FileManager.default.contentsOfDirectory(atPath: RepositoryRoot.path + "/sql")
            .filter { $0.hasSuffix(".sql") }.max { Int($0.prefix(3))! < Int($1.prefix(3))! }
        return "detour-analytics \(DetourAnalytics.version) (schema \(try #require(newest).dropLast(4)))\n"
    }

    @Test("--version names the newest file of --sql-dir by version, and says when it holds none, still exit 0")
    func versionOfSQLDirectory() throws {
        let sql = try TemporaryDirectory()
        for name in ["002_b.sql", "010_c.sql", "001_a.sql", "notes.txt"] {
            try Data("SELECT 1;".utf8).write(to: URL(fileURLWithPath: sql.path + "/" + name))
        }
        let named = try PipelineProcess.runToEnd(["--version", "--sql-dir", sql.path])
        #expect(named.status == 0, "\(named.errors)")
        #expect(named.output == "detour-analytics \(DetourAnalytics.version) (schema 010_c)\n")
        let empty = try TemporaryDirectory()
        let none = try PipelineProcess.runToEnd(["version"], environment: ["DETOUR_SQL_DIR": empty.path])
        #expect(none.status == 0, "\(none.errors)")
        #expect(
            none.output.hasPrefix("detour-analytics \(DetourAnalytics.version) (schema unknown: no migration files"))
        #expect(none.output.split(separator: "\n").count == 1, "\(none.output)")
    }

    @Test("--help mentions --version, and version --help says what it prints")
    func helpMentionsVersion() throws {
        let top = try PipelineProcess.runToEnd(["--help"])
        #expect(top.status == 0)
        #expect(top.output.contains("--version"), "\(top.output)")
        let command = try PipelineProcess.runToEnd(["version", "--help"])
        #expect(command.status == 0)
        #expect(command.output.contains("--sql-dir") && command.output.contains("DETOUR_SQL_DIR"))
    }
}
