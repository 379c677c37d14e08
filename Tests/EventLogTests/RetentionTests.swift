import Foundation
import Testing

@testable import EventLog

@Suite struct RetentionTests {
    /// Three writer sessions: segments 1, 2 and 3 (3 is open).
    private func threeSegments(_ configuration: LogConfiguration) throws {
        for session in 0..<3 {
            let writer = try LogWriter(configuration: configuration)
            try writer.append([envelope(session)])
            writer.close()
        }
    }

    @Test("only loaded segments before the checkpoint and old enough are deleted")
    func respectsCheckpointAndAge() throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir)
            try threeSegments(configuration)
            let later = LogClock { LogClock.system.now() + 7_200_000_000 }
            let checkpoint = LogPosition(segment: 2, offset: 0)
            let young = try LogRetention.deleteLoaded(
                directory: configuration.directory, node: "node-1", loadedThrough: checkpoint, olderThan: .seconds(3600))
            #expect(young.isEmpty)
            let deleted = try LogRetention.deleteLoaded(
                directory: configuration.directory, node: "node-1", loadedThrough: checkpoint, olderThan: .seconds(3600),
                clock: later)
            #expect(deleted.map { $0.hasSuffix(SegmentFormat.fileName(segment: 1)) } == [true])
            #expect(try LogReader(directory: configuration.directory, node: "node-1").segments().map(\.id) == [2, 3])
        }
    }

    @Test("the open segment survives even when the checkpoint is past it")
    func neverDeletesOpenSegment() throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir)
            try threeSegments(configuration)
            let deleted = try LogRetention.deleteLoaded(
                directory: configuration.directory, node: "node-1", loadedThrough: LogPosition(segment: 99, offset: 0),
                olderThan: .zero)
            #expect(deleted.count == 2)
            #expect(try LogReader(directory: configuration.directory, node: "node-1").segments().map(\.id) == [3])
            #expect(try LogRetention.diskUsage(directory: configuration.directory, node: "node-1") > 0)
            // A reader positioned in a deleted segment moves on to what remains.
            let batch = try LogReader(directory: configuration.directory, node: "node-1")
                .read(after: LogPosition(segment: 1, offset: 40), maxRecords: 10, maxBytes: 1 << 20)
            #expect(batch.records.map { String(decoding: $0, as: UTF8.self) } == [String(decoding: envelope(2), as: UTF8.self)])
        }
    }
}
