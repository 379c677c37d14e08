import Foundation
import Testing

@testable import EventLog

@Suite struct SegmentStateMachineTests {
    private let limits = SegmentStateMachine.Limits(
        maxSegmentBytes: 1000, maxSegmentAgeMicros: 60_000_000, maxDiskBytes: 5000, syncIntervalMicros: nil)

    @Test("the first frame creates a segment, later frames append until the size limit")
    func rotationBySize() {
        var machine = SegmentStateMachine(limits: limits, nextSegmentID: 7, nextSequence: 0, diskBytes: 0)
        guard case .write(let first) = machine.plan(frameBytes: 600, now: 0) else { Issue.record("refused"); return }
        #expect(first.rotate && first.segment == 7 && first.offset == 0 && first.syncAfterWrite)
        machine.didWrite(frameBytes: 600, records: 3, now: 0, synced: true)
        guard case .write(let second) = machine.plan(frameBytes: 300, now: 1) else { Issue.record("refused"); return }
        #expect(!second.rotate && second.segment == 7 && second.offset == 600)
        machine.didWrite(frameBytes: 300, records: 2, now: 1, synced: true)
        guard case .write(let third) = machine.plan(frameBytes: 200, now: 2) else { Issue.record("refused"); return }
        #expect(third.rotate && third.segment == 8 && third.offset == 0)
        machine.didWrite(frameBytes: 200, records: 1, now: 2, synced: true)
        #expect(machine.nextSequence == 6)
    }

    @Test("a segment older than the age limit is sealed at the next commit")
    func rotationByAge() {
        var machine = SegmentStateMachine(limits: limits, nextSegmentID: 1, nextSequence: 0, diskBytes: 0)
        _ = machine.plan(frameBytes: 10, now: 0)
        machine.didWrite(frameBytes: 10, records: 1, now: 0, synced: true)
        guard case .write(let young) = machine.plan(frameBytes: 10, now: 59_999_999) else {
            Issue.record("refused"); return
        }
        #expect(!young.rotate)
        machine.didWrite(frameBytes: 10, records: 1, now: 59_999_999, synced: true)
        guard case .write(let old) = machine.plan(frameBytes: 10, now: 60_000_000) else {
            Issue.record("refused"); return
        }
        #expect(old.rotate && old.segment == 2)
    }

    @Test("the disk cap refuses a frame; measured free space lets it through again")
    func diskCap() {
        var machine = SegmentStateMachine(limits: limits, nextSegmentID: 1, nextSequence: 0, diskBytes: 4900)
        #expect(machine.plan(frameBytes: 200, now: 0) == .diskFull)
        machine.measuredDisk(bytes: 1000)
        if case .diskFull = machine.plan(frameBytes: 200, now: 0) { Issue.record("still refused") }
    }

    @Test("after a completely written frame failed to sync, the next frame starts a new segment")
    func failureRotates() {
        var machine = SegmentStateMachine(limits: limits, nextSegmentID: 1, nextSequence: 0, diskBytes: 0)
        _ = machine.plan(frameBytes: 10, now: 0)
        machine.didWrite(frameBytes: 10, records: 1, now: 0, synced: true)
        _ = machine.plan(frameBytes: 10, now: 1)
        machine.didFail(frameWasComplete: false, truncated: true)  // short write, cut: same segment
        guard case .write(let retry) = machine.plan(frameBytes: 10, now: 2) else { Issue.record("refused"); return }
        #expect(!retry.rotate && retry.offset == 10)
        machine.didFail(frameWasComplete: true, truncated: true)  // fsync failed: a reader may have seen it
        guard case .write(let next) = machine.plan(frameBytes: 10, now: 3) else { Issue.record("refused"); return }
        #expect(next.rotate && next.segment == 2)
    }

    @Test("a failed group gives back its sequence numbers and continues in a new segment")
    func undoGroup() {
        var machine = SegmentStateMachine(limits: limits, nextSegmentID: 1, nextSequence: 0, diskBytes: 0)
        _ = machine.plan(frameBytes: 100, now: 0)
        machine.didWrite(frameBytes: 100, records: 4, now: 0, synced: true)
        _ = machine.plan(frameBytes: 100, now: 1)
        machine.didWrite(frameBytes: 100, records: 3, now: 1, synced: false)
        _ = machine.plan(frameBytes: 50, now: 1)
        machine.didWrite(frameBytes: 50, records: 2, now: 1, synced: false)
        machine.undoWrites(records: 5, bytes: 150)  // the group's fdatasync failed
        machine.didFail(frameWasComplete: true, truncated: true)
        #expect(machine.nextSequence == 4 && machine.diskBytes == 100)
        guard case .write(let next) = machine.plan(frameBytes: 10, now: 2) else { Issue.record("refused"); return }
        #expect(next.rotate && next.segment == 2)
    }

    @Test("interval durability syncs when the oldest unsynced write reaches the interval")
    func intervalSync() {
        var limits = self.limits
        limits.syncIntervalMicros = 1000
        var machine = SegmentStateMachine(limits: limits, nextSegmentID: 1, nextSequence: 0, diskBytes: 0)
        guard case .write(let first) = machine.plan(frameBytes: 10, now: 0) else { Issue.record("refused"); return }
        #expect(!first.syncAfterWrite)
        machine.didWrite(frameBytes: 10, records: 1, now: 0, synced: false)
        #expect(machine.microsUntilSync(now: 400) == 600)
        #expect(!machine.isSyncDue(now: 999) && machine.isSyncDue(now: 1000))
        guard case .write(let late) = machine.plan(frameBytes: 10, now: 1500) else { Issue.record("refused"); return }
        #expect(late.syncAfterWrite)
    }
}

@Suite struct RotationTests {
    @Test("segments roll over by size; none grows past the limit")
    func bySize() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.maxSegmentBytes = 2000
            let writer = try LogWriter(configuration: configuration)
            for frame in 0..<30 { try writer.append((0..<3).map { envelope(frame * 3 + $0) }) }
            writer.close()
            let segments = try LogReader(directory: configuration.directory, node: "node-1").segments()
            #expect(segments.count > 3)
            #expect(segments.allSatisfy { $0.bytes <= 2000 })
            #expect(try readAll(configuration.directory).records.count == 90)
        }
    }

    @Test("segments roll over by age on the writer's clock")
    func byAge() throws {
        try withTemporaryDirectory { dir in
            let clock = ManualClock()
            var configuration = testConfiguration(dir)
            configuration.clock = clock.clock
            configuration.maxSegmentAge = .seconds(60)
            let writer = try LogWriter(configuration: configuration)
            try writer.append([envelope(1)])
            clock.advance(by: .seconds(59))
            try writer.append([envelope(2)])
            clock.advance(by: .seconds(2))
            try writer.append([envelope(3)])
            writer.close()
            let segments = try LogReader(directory: configuration.directory, node: "node-1").segments()
            #expect(segments.count == 2)
            #expect(try SegmentInspector.inspect(path: segments[0].path).records == 2)
            #expect(try readAll(configuration.directory).records.count == 3)
        }
    }
}
