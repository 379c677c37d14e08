import Foundation
import Postgres
import TestSupport
import Testing

/// `detour-analytics report daily` and the output directory it shares with runs before it and runs
/// in other containers.
@Suite
struct ReportDailyCommandTests {
    /// A run killed between creating a temporary file and renaming it left the file for good.
    @Test("report daily removes the temporary files a killed run left, once an hour old, and not a live writer's")
    func removesAbandonedTemporaryFiles() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try connection.execute("INSERT INTO apps (id, name, time_zone) VALUES ('utc', 'utc', 'UTC')")
        try connection.execute(
            """
            INSERT INTO load_checkpoints (node, segment, frame_offset, newest_received_at)
            VALUES ('node-1', 1, 0, '2026-06-02T01:20:00Z')
            """)
        let out = try TemporaryDirectory()
        // PID 1 in every name: the compose file's one-off containers all run the binary as PID 1, so
        // the files of a killed run and of one writing now in another container carry the same id.
        let abandoned = [
            "2026-06-01/utc/links.csv.tmp-1-3w5e11264sgsf",  // the date this run writes
            "2026-05-31/utc/report.json.tmp-1-k2",  // an earlier date: the run that was killed
            "2026-05-30/utc/report.html.tmp-1",  // named as binaries before 2026-12-02 did
        ]
        let kept = [
            "2026-05-31/utc/report.html.tmp-1-z9",  // being written now (modified just now)
            "2026-05-31/utc/notes.tmp-old",  // not a name of the report's
            "archive/utc/report.json.tmp-1-k2",  // not under a date
        ]
        for (index, name) in (abandoned + kept).enumerated() {
            let path = out.path + "/" + name
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data("half a report".utf8).write(to: URL(fileURLWithPath: path))
            guard index != abandoned.count else { continue }  // the live writer's file stays new
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -2 * 86400)], ofItemAtPath: path)
        }
        let result = try PipelineProcess.runToEnd(
            ["report", "daily", "--date", "2026-06-01", "--out", out.path, "--format", "csv,json"],
            environment: ["DATABASE_URL": database.url])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("report daily: removed 3 temporary files an interrupted run left"))
        for name in abandoned {
            #expect(!FileManager.default.fileExists(atPath: out.path + "/" + name), "\(name) is still there")
        }
        for name in kept {
            #expect(FileManager.default.fileExists(atPath: out.path + "/" + name), "\(name) was removed")
        }
        #expect(FileManager.default.fileExists(atPath: out.path + "/2026-06-01/utc/report.json"))
    }
}
