import Foundation
import Glibc
import Locking
import Synchronization
import TestSupport
import Testing

@testable import EventLog

@Suite struct DiskFullTests {
    @Test("the disk cap turns appends into diskFull without a partial frame; they succeed once space returns")
    func diskCap() throws {
        try withTemporaryDirectory { dir in
            let clock = ManualClock()
            var configuration = testConfiguration(dir)
            configuration.clock = clock.clock
            configuration.maxSegmentBytes = 1500
            configuration.maxDiskBytes = 6000
            let writer = try LogWriter(configuration: configuration)
            defer { writer.close() }
            var acknowledged = 0
            var refusal: LogError?
            for index in 0..<200 {
                do throws(LogError) {
                    try writer.append([envelope(index)])
                    acknowledged += 1
                } catch {
                    refusal = error
                    break
                }
            }
            #expect(refusal == .diskFull)
            #expect(try LogRetention.diskUsage(directory: configuration.directory, node: "node-1") <= 6000)
            #expect(try SegmentInspector.verify(path: configuration.directory).isHealthy)
            #expect(try readAll(configuration.directory).records.count == acknowledged)

            // The aggregator loaded everything; retention frees the sealed segments.
            let end = try #require(try LogReader(directory: configuration.directory, node: "node-1").endPosition())
            try LogRetention.deleteLoaded(
                directory: configuration.directory, node: "node-1", loadedThrough: end, olderThan: .zero)
            clock.advance(by: .seconds(2))
            try writer.append([Array("{\"after\":\"space\"}".utf8)])
            #expect(writer.isWritable)
            #expect(try readAll(configuration.directory).records.last == "{\"after\":\"space\"}")
        }
    }

    @Test(
        "a frame the disk cap's re-check lets into a new segment starts the next group: a group never spans two segments, so a failed sync leaves none of its frames"
    )
    func groupStaysInOneSegment() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            let clock = ManualClock()
            configuration.clock = clock.clock
            configuration.preallocationBytes = 0
            let syncFails = Atomic<Bool>(false)
            configuration.groupSync = { fd in
                syncFails.load(ordering: .relaxed) ? EIO : (fdatasync(fd) == 0 ? 0 : errno)
            }
            let encoder = try FrameEncoder(codec: configuration.codec, level: configuration.compressionLevel)
            let prefix = SegmentFormat.prefixSize(configuration.codec)
            func job(_ ids: Range<Int>) -> (job: FrameJob, bytes: Int64) {
                let job = FrameJob()
                for id in ids { job.ndjson += envelope(id) + [10] }
                job.records = ids.count
                encoder.encode(job)
                return (job, Int64(prefix + job.bodyLength))
            }
            let (older, olderBytes) = job(200..<211)
            let (kept, keptBytes) = job(100..<101)
            let (first, firstBytes) = job(0..<1)
            let (second, _) = job(1..<12)
            // `kept` and `first` fit one segment, `second` does not fit beside them, `older` not
            // beside `kept`; and by the writer's count `first` just fits under the disk cap.
            configuration.maxSegmentBytes = keptBytes + firstBytes + 10
            configuration.maxDiskBytes = olderBytes + keptBytes + firstBytes
            configuration = try configuration.validated()

            let lock = try WriterCore.lockDirectory(configuration.nodeDirectory)
            let core = WriterCore(
                configuration: configuration, lockFD: lock,
                recovered: try Recovery.run(nodeDirectory: configuration.nodeDirectory),
                metrics: LogMetrics(configuration: configuration))
            defer { core.close() }
            #expect(core.commit([older][...]) == 1)
            #expect(core.commit([kept][...]) == 1)
            // Retention deletes the older segment; a second later the writer may look at the disk again.
            try FileManager.default.removeItem(
                atPath: configuration.nodeDirectory + "/" + SegmentFormat.fileName(segment: 1))
            clock.advance(by: .seconds(2))

            syncFails.store(true, ordering: .relaxed)
            let consumed = core.commit([first, second][...])
            #expect(consumed == 1, "the group went on into a new segment")
            #expect(first.error != nil)
            #expect(second.error == nil)
            // Failed, so not in the log: a client told so sends it again.
            let line = { (id: Int) in String(decoding: envelope(id), as: UTF8.self) }
            #expect(try readAll(configuration.directory).records == [line(100)])

            syncFails.store(false, ordering: .relaxed)
            #expect(core.commit([second][...]) == 1)
            #expect(second.error == nil)
            #expect(try readAll(configuration.directory).records == [line(100)] + (1..<12).map(line))
            #expect(try SegmentInspector.verify(path: configuration.directory).isHealthy)
        }
    }

    @Test("a failed commit makes the log report not writable and fail fast until retryAfter")
    func notWritableAfterFailure() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.maxDiskBytes = 10
            configuration.retryAfter = .seconds(3600)
            let writer = try LogWriter(configuration: configuration)
            defer { writer.close() }
            #expect(writer.isWritable)
            #expect(throws: LogError.diskFull) { try writer.append([envelope(1)]) }
            #expect(!writer.isWritable)
            #expect(throws: LogError.diskFull) { try writer.append([envelope(2)]) }
            #expect(writer.framesCommitted == 0)
        }
    }

    @Test("a really full file system (small tmpfs) gives diskFull, leaves only whole frames, and recovers")
    func realENOSPC() throws {
        try withTmpfs(size: "96k") { mountPoint in
            var configuration = LogConfiguration(directory: mountPoint + "/segments")
            configuration.groupCommitDelay = .zero
            configuration.retryAfter = .zero
            configuration.compressionLevel = -5  // fast and weak: fills the disk sooner
            let filler = mountPoint + "/filler"
            #expect(FileManager.default.createFile(atPath: filler, contents: Data(count: 32 * 1024)))
            let writer = try LogWriter(configuration: configuration)
            defer { writer.close() }
            var acknowledged = 0
            var refusal: LogError?
            for index in 0..<2000 {
                do throws(LogError) {
                    try writer.append((0..<20).map { envelope(index * 20 + $0, receivedAt: "\(UUID().uuidString)") })
                    acknowledged += 20
                } catch {
                    refusal = error
                    break
                }
            }
            #expect(refusal == .diskFull)
            #expect(try SegmentInspector.verify(path: configuration.directory).isHealthy)
            #expect(try readAll(configuration.directory).records.count == acknowledged)
            // Space returns: appends succeed again on the same writer (the failed frame was cut away).
            try FileManager.default.removeItem(atPath: filler)
            try writer.append([Array("{\"after\":\"space\"}".utf8)])
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(records.count == acknowledged + 1)
        }
    }

    @Test("concurrent appends filling a small tmpfs: every acknowledged record is readable, sequences stay gap-free")
    func concurrentENOSPC() throws {
        try withTmpfs(size: "128k") { mountPoint in
            var configuration = LogConfiguration(directory: mountPoint + "/segments")
            configuration.groupCommitDelay = .microseconds(100)
            configuration.groupCommitBytes = 2048  // many small frames, several per commit group
            configuration.retryAfter = .zero
            configuration.compressionThreads = 3
            let writer = try LogWriter(configuration: configuration)
            let acknowledged = Locked<Set<String>>([])
            let refusals = Locked<Int>(0)
            try runThreads(8) { thread in
                for index in 0..<400 {
                    let records = (0..<5).map {
                        envelope(thread * 10_000 + index * 5 + $0, receivedAt: UUID().uuidString)
                    }
                    do throws(LogError) {
                        try writer.append(records)
                        acknowledged.withLock { set in
                            for record in records { set.insert(String(decoding: record, as: UTF8.self)) }
                        }
                    } catch {
                        #expect(error == .diskFull)
                        refusals.withLock { $0 += 1 }
                    }
                }
            }
            writer.close()
            #expect(refusals.withLock { $0 } > 0)
            #expect(try SegmentInspector.verify(path: configuration.directory).isHealthy)
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(Set(records) == acknowledged.withLock { $0 })
            #expect(records.count == Set(records).count)
            #expect(try sequencesAreGapFree(configuration.directory))
        }
    }

    @Test("a reader whose open segment is cut back after it opened it (a failed write) ends there, not past the file")
    func segmentCutWhileReading() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.preallocationBytes = 0
            let (path, offsets) = try writeFrames(configuration, frames: 3)
            // The aggregator opened the open segment, then the writer's write of the third frame
            // failed on a full disk and cut it away (WriterCore.failGroup), to write there again.
            let scanner = try FrameScanner(path: path)
            #expect(truncate(path, off_t(offsets[2])) == 0)
            guard case .frame = try scanner.step(at: offsets[0]), case .frame = try scanner.step(at: offsets[1]) else {
                Issue.record("the frames before the cut do not read back")
                return
            }
            // The second frame's bytes, still in the scanner's buffers, were read as a damaged frame
            // at the cut, and again at every frame length up to the old size: the reader's checkpoint
            // went past the end of the file, and the frames written at the cut were never loaded.
            let atCut = try scanner.step(at: offsets[2])
            guard case .end = atCut else {
                Issue.record("at the cut: \(atCut)")
                return
            }
            #expect(try !scanner.hasFramePrefix(at: offsets[2]))
            #expect(try scanner.frameEnd(from: 0) == offsets[2])
        }
    }

    /// Runs `body` with the path of a fresh tmpfs of `size` (a real file system that fills up),
    /// unmounted afterwards. Mounting needs root (CAP_SYS_ADMIN); without it the test is cancelled
    /// as skipped, and the disk-cap test covers the same logic.
    private func withTmpfs(size: String, _ body: (String) throws -> Void) throws {
        var failure: Int32 = 0
        guard let tmpfs = Tmpfs(size: size, failure: &failure) else {
            try Test.cancel("skipped: cannot mount a tmpfs here (errno \(failure)); needs root")
        }
        try withExtendedLifetime(tmpfs) { try body(tmpfs.path) }
    }
}
