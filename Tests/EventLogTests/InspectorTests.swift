import Foundation
import Locking
import Observability
import Testing

@testable import EventLog

@Suite struct InspectorTests {
    @Test("list shows frames, records and the received_at range; verify passes a healthy log")
    func listAndVerify() throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir)
            let writer = try LogWriter(configuration: configuration)
            try writer.append([
                envelope(1, receivedAt: "2026-06-01T10:00:00.000Z"),
                envelope(2, receivedAt: "2026-06-01T09:00:00.000Z"),
            ])
            try writer.append([envelope(3, receivedAt: "2026-06-02T08:00:00.000Z")])
            writer.close()
            let reports = try SegmentInspector.list(directory: configuration.directory)
            #expect(reports.count == 1)
            let report = try #require(reports.first)
            #expect(report.goodFrames == 2 && report.records == 3 && report.isOpen && report.id == 1)
            #expect(report.receivedAtRange?.first == "2026-06-01T09:00:00.000Z")
            #expect(report.receivedAtRange?.last == "2026-06-02T08:00:00.000Z")
            #expect(
                SegmentInspector.renderList(reports).contains("2026-06-01T09:00:00.000Z .. 2026-06-02T08:00:00.000Z"))

            let inspected = try SegmentInspector.inspect(path: report.path)
            #expect(inspected.frames.map(\.records) == [2, 1])
            #expect(inspected.frames.allSatisfy { $0.problem == nil && $0.codec == .zstd })
            #expect(inspected.frames.map(\.firstSequence) == [0, 2])
            #expect(inspected.rendered().contains("ok"))

            let verify = try SegmentInspector.verify(path: dir + "/segments")
            #expect(verify.isHealthy && verify.exitCode == 0)
            #expect(verify.rendered().hasPrefix("ok: 1 segments, 2 frames, 3 records"))
            #expect(try SegmentInspector.verify(path: report.path).isHealthy)
        }
    }

    @Test("a torn tail of the open segment is not an error for readers or verify, but is for a sealed one")
    func tornOpenTail() throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir)
            let writer = try LogWriter(configuration: configuration)
            try writer.append([envelope(1)])
            try writer.append([envelope(2)])
            writer.close()
            let path = try #require(try segmentPaths(configuration.directory).first)
            try appendToFile(path, Data([0x5D, 0x2A, 0x4D, 0x18, 0x2C, 0, 0]))  // a write in progress
            let (records, damaged) = try readAll(configuration.directory)
            #expect(records.count == 2 && damaged.isEmpty)
            let verified = try SegmentInspector.verify(path: configuration.directory)
            #expect(verified.isHealthy)
            // Shown, not hidden: verify names the incomplete frame, inspect does not call it damage.
            #expect(verified.rendered().contains("incomplete \(path) offset "), "\(verified.rendered())")
            let inspected = try SegmentInspector.inspect(path: path).rendered()
            #expect(inspected.contains("INCOMPLETE: ") && !inspected.contains("DAMAGED"), "\(inspected)")

            // A sealed segment with the same tail is damage: report it.
            try FileManager.default.createDirectory(
                atPath: configuration.nodeDirectory, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(
                atPath: configuration.nodeDirectory + "/" + SegmentFormat.fileName(segment: 9), contents: nil)
            let sealed = try readAll(configuration.directory)
            #expect(sealed.records.count == 2)
            #expect(sealed.damaged.map(\.segment) == [1])
            let failed = try SegmentInspector.verify(path: configuration.directory)
            #expect(failed.exitCode == 1)
            #expect(failed.rendered().contains("DAMAGED \(path) offset "), "\(failed.rendered())")
            #expect(try SegmentInspector.inspect(path: path).rendered().contains("DAMAGED: "))
        }
    }
}

@Suite(.serialized) struct ObservabilityOfLogTests {
    /// Runs `body` with every log line captured; `lines()` returns those so far.
    private func withLogLines(_ body: (_ lines: () -> [String]) throws -> Void) throws {
        try Logger.capture(body)
    }

    @Test("recovery of a segment with a zero tail (a crash while preallocated) cuts it without logging a cut")
    func zeroTailIsNotLoggedAsCut() throws {
        try withLogLines { lines in
            try withTemporaryDirectory { dir in
                let configuration = testConfiguration(dir)
                let (path, _) = try writeFrames(configuration, frames: 2, perFrame: 1)  // envelopes 0 and 1
                let size = try #require(try FileSystem.status(path)).size
                try appendToFile(path, Data(count: 3 << 20))
                let next = try LogWriter(configuration: configuration)
                try next.append([envelope(3)])
                next.close()
                #expect(try FileSystem.status(path)?.size == size)
                #expect(lines().filter { $0.contains(path) }.isEmpty)
                let (records, damaged) = try readAll(configuration.directory)
                #expect(damaged.isEmpty)
                #expect(records == [0, 1, 3].map { String(decoding: envelope($0), as: UTF8.self) })
            }
        }
    }

    @Test("recovery logs what it cut and the writer publishes metrics")
    func logsAndMetrics() throws {
        // This writer's own series: the shared registry shows the names as soon as any test's writer
        // registers them, which was all this checked until 2026-12-05.
        let node = "inspector-" + UUID().uuidString.prefix(8)
        try withLogLines { lines in
            try withTemporaryDirectory { dir in
                var configuration = testConfiguration(dir)
                configuration.node = node
                let (path, _) = try writeFrames(configuration, frames: 1, perFrame: 1)
                try appendToFile(path, Data(repeating: 0x41, count: 10))
                try LogWriter(configuration: configuration).close()
                let logged = lines().filter { $0.contains("segment.tail_truncated") && $0.contains(path) }
                #expect(logged.count == 1)
                #expect(logged.first?.contains("cut.bytes=10") == true)
            }
        }
        let metrics = MetricsRegistry.shared.render().split(separator: "\n").filter { $0.contains("node=\"\(node)\"") }
        for name in [
            "eventlog_append_seconds_count", "eventlog_fsync_seconds_count", "eventlog_frames_total",
            "eventlog_bytes_written_total", "eventlog_disk_bytes",
        ] {
            let value = metrics.first { $0.hasPrefix(name + "{") }.flatMap {
                Double($0.split(separator: " ").last ?? "")
            }
            #expect((value ?? 0) > 0, "\(name): \(metrics)")
        }
    }
}
