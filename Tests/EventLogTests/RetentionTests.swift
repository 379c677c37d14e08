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
                directory: configuration.directory, node: "node-1", loadedThrough: checkpoint, olderThan: .seconds(3600)
            )
            #expect(young.isEmpty)
            let deleted = try LogRetention.deleteLoaded(
                directory: configuration.directory, node: "node-1", loadedThrough: checkpoint,
                olderThan: .seconds(3600),
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
            #expect(
                batch.records.map { String(decoding: $0, as: UTF8.self) } == [
                    String(decoding: envelope(2), as: UTF8.self)
                ])
        }
    }

    @Test("prune deletes sealed segments by age, then oldest first down to a size, never the open one")
    func pruneByAgeAndSize() throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir)
            try threeSegments(configuration)
            let reader = try LogReader(directory: configuration.directory, node: "node-1")
            let sizes = try reader.segments().map(\.bytes)
            // Young and within the size: nothing goes.
            #expect(
                try LogRetention.prune(
                    directory: configuration.directory, node: "node-1", olderThan: .seconds(3600),
                    keepBytes: sizes.reduce(0, +)
                ).isEmpty)
            // One byte over: the oldest sealed segment goes, and that is enough.
            let one = try LogRetention.prune(
                directory: configuration.directory, node: "node-1", olderThan: nil, keepBytes: sizes.reduce(0, +) - 1)
            #expect(one.map { $0.hasSuffix(SegmentFormat.fileName(segment: 1)) } == [true])
            // Two hours later, with no size bound, age takes the other sealed one; the open one stays.
            let later = LogClock { LogClock.system.now() + 7_200_000_000 }
            let aged = try LogRetention.prune(
                directory: configuration.directory, node: "node-1", olderThan: .seconds(3600), keepBytes: nil,
                clock: later)
            #expect(aged.map { $0.hasSuffix(SegmentFormat.fileName(segment: 2)) } == [true])
            #expect(
                try LogRetention.prune(
                    directory: configuration.directory, node: "node-1", olderThan: .zero, keepBytes: 0
                )
                .isEmpty)
            #expect(try reader.segments().map(\.id) == [3])
        }
    }
}
