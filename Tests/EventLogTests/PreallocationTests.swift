import Foundation
import Glibc
import Locking
import TestSupport
import Testing

@testable import EventLog

@Suite struct PreallocationTests {
    @Test(
        "a torn final frame cut at every byte, with preallocated zeros after it, recovers to the previous frame",
        arguments: Codec.allCases)
    func tornAtEveryByteBeforeZeros(codec: Codec) throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir, codec: codec)
            let (path, offsets) = try writeFrames(configuration, frames: 3, perFrame: 1)
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(try SegmentInspector.inspect(path: path).zeroTailBytes == 0)
            let lastStart = Int(offsets[2])
            // A frame that ends in zero bytes (a gzip trailer's ISIZE of a small frame does) is
            // whole again when only those are cut and zeros follow: the same bytes.
            let intactFrom = (original.lastIndex { $0 != 0 } ?? 0) + 1
            for cut in lastStart..<original.count {
                try (original.prefix(cut) + Data(count: 20_000)).write(to: URL(fileURLWithPath: path))
                let recovered = try Recovery.run(nodeDirectory: configuration.nodeDirectory)
                let intact = cut >= intactFrom
                let expected = (0..<(intact ? 3 : 2)).map { String(decoding: envelope($0), as: UTF8.self) }
                #expect(
                    try Data(contentsOf: URL(fileURLWithPath: path)).count == (intact ? original.count : lastStart),
                    "cut at \(cut)")
                // Only a real partial frame counts as cut; zeros alone are the writer's preallocation.
                #expect((recovered.truncatedBytes == 0) == (cut == lastStart || intact), "cut at \(cut)")
                #expect(recovered.zeroTailBytes > 0, "cut at \(cut)")
                #expect(recovered.nextSequence == (intact ? 3 : 2), "cut at \(cut)")
                try expectResumes(
                    after: cut, writer: try LogWriter(configuration: configuration), configuration: configuration,
                    expected: expected, keeping: path)
            }
        }
    }

    @Test(
        "sealed segments carry no zero tail and stock tools read them while the open one is preallocated",
        arguments: Codec.allCases)
    func sealedSegmentsAreTrimmed(codec: Codec) throws {
        let tool = codec == .zstd ? "/usr/bin/zstdcat" : "/bin/zcat"
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir, codec: codec)
            configuration.maxSegmentBytes = 12 * 1024
            configuration.preallocationBytes = 8 * 1024
            let writer = try LogWriter(configuration: configuration)
            var appended: [String] = []
            for batch in 0..<60 {
                let records = (0..<10).map { envelope(batch * 10 + $0, receivedAt: UUID().uuidString) }
                try writer.append(records)
                appended += records.map { String(decoding: $0, as: UTF8.self) }
            }
            let reader = try LogReader(directory: configuration.directory, node: configuration.node)
            let segments = try reader.segments()
            #expect(segments.count >= 3)
            let open = try #require(segments.last)
            // The preallocator zero-fills the open segment ahead of its frames (on its own thread).
            var openReport = try SegmentInspector.inspect(path: open.path)
            for _ in 0..<6000 where openReport.zeroTailBytes == 0 {  // at most 60 s
                usleep(10_000)
                openReport = try SegmentInspector.inspect(path: open.path)
            }
            #expect(openReport.zeroTailBytes > 0)
            #expect(openReport.damage.isEmpty)
            #expect(
                openReport.rendered().contains(
                    "zero tail: \(openReport.zeroTailBytes) bytes preallocated by the writer"))
            // `segments list` shows the open segment's data and its zeros apart, and the total on disk.
            let dataBytes = openReport.bytes - openReport.zeroTailBytes
            let listed = SegmentInspector.renderList([openReport])
            #expect(listed.contains("  \(dataBytes)+\(openReport.zeroTailBytes)  "))
            #expect(
                listed.contains(
                    "\(openReport.bytes) bytes on disk (\(dataBytes) of data, \(openReport.zeroTailBytes) preallocated zeros)"
                ))
            #expect(try SegmentInspector.verify(path: configuration.directory).isHealthy)
            var sealedRecords: [String] = []
            for segment in segments.dropLast() {
                let report = try SegmentInspector.inspect(path: segment.path)
                #expect(report.zeroTailBytes == 0)
                #expect(report.frames.allSatisfy { $0.problem == nil })
                #expect(Int64(report.frames.reduce(0) { $0 + $1.frameBytes }) == segment.bytes, "\(segment.path)")
                sealedRecords += try readFile(segment.path)
            }
            if FileManager.default.isExecutableFile(atPath: tool) {
                let (status, output) = try runTool(tool, arguments: segments.dropLast().map(\.path))
                #expect(status == 0)
                #expect(String(decoding: output, as: UTF8.self) == sealedRecords.map { $0 + "\n" }.joined())
            }
            // Reading to the end stops at the zero tail: nothing behind, the end is a frame boundary.
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(records == appended)
            let end = try #require(try reader.endPosition())
            #expect(end.segment == open.id)
            #expect(end.offset == Int64(openReport.frames.reduce(0) { $0 + $1.frameBytes }))
            #expect(end.offset < open.bytes)
            #expect(try reader.bytesBehind(end) == 0)
            #expect(try reader.read(after: end, maxRecords: 10, maxBytes: 1 << 20).isEmpty)

            // Closing cuts the open segment's zeros off too: every segment reads with stock tools.
            writer.close()
            #expect(try SegmentInspector.inspect(path: open.path).zeroTailBytes == 0)
            if FileManager.default.isExecutableFile(atPath: tool) {
                let (status, output) = try runTool(tool, arguments: try segmentPaths(configuration.directory))
                #expect(status == 0)
                #expect(String(decoding: output, as: UTF8.self) == appended.map { $0 + "\n" }.joined())
            }
        }
    }

    @Test("a reader of the open segment never skips or misreads a frame being written into preallocated space")
    func concurrentReaderAndWriter() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.maxSegmentBytes = 4 << 20
            configuration.preallocationBytes = 256 * 1024
            configuration.groupCommitBytes = 64 * 1024
            configuration.compressionLevel = -5
            let writer = try LogWriter(configuration: configuration)
            // Poorly compressible records make frames of many pages, so a reader often meets one
            // that is only partly copied into the zero tail.
            @Sendable func record(_ thread: Int, _ index: Int) -> [UInt8] {
                var generator = SystemRandomNumberGenerator()
                let noise = (0..<48).map { _ in String(generator.next() as UInt64, radix: 16) }.joined()
                return Array("{\"t\":\(thread),\"i\":\(index),\"noise\":\"\(noise)\"}".utf8)
            }
            let writing = Locked<Int>(4)
            let readerResult = Locked<(records: Int, damaged: [FrameDamage], gaps: [String])>((0, [], []))
            let reader = try LogReader(directory: configuration.directory, node: configuration.node)
            let readerDone = DispatchSemaphore(value: 0)
            let readerThread = Thread {
                var position: LogPosition?
                var expectedSequence: UInt64 = 0
                var result: (records: Int, damaged: [FrameDamage], gaps: [String]) = (0, [], [])
                var idleAfterWriters = 0
                let deadline = Date().addingTimeInterval(120)
                for _ in 0..<1_000_000 where idleAfterWriters < 3 && Date() < deadline {
                    guard let batch = try? reader.read(after: position, maxRecords: 2000, maxBytes: 1 << 20) else {
                        result.gaps.append("read failed")
                        break
                    }
                    result.damaged += batch.damaged
                    if let first = batch.firstSequence, first != expectedSequence {
                        result.gaps.append(
                            "expected sequence \(expectedSequence), read \(first) at \(position.map { "\($0)" } ?? "start")"
                        )
                    }
                    expectedSequence += UInt64(batch.count)
                    result.records += batch.count
                    position = batch.next
                    if batch.isEmpty {
                        if writing.withLock({ $0 }) == 0 { idleAfterWriters += 1 }
                        usleep(200)
                    }
                }
                readerResult.withLock { $0 = result }
                readerDone.signal()
            }
            readerThread.start()
            try runThreads(4) { thread in
                for index in 0..<150 {
                    try? writer.append((0..<12).map { record(thread, index * 12 + $0) })
                }
                writing.withLock { $0 -= 1 }
            }
            #expect(readerDone.wait(timeout: .now() + 150) == .success)
            let fills = writer.core.preallocator?.counts.fills ?? 0
            writer.close()
            let result = readerResult.withLock { $0 }
            #expect(result.damaged.isEmpty)
            #expect(result.gaps.isEmpty)
            #expect(result.records == 4 * 150 * 12)
            #expect(fills > 1)
            #expect(try sequencesAreGapFree(configuration.directory))
        }
    }

    @Test(
        "the zero-fill writes and syncs through a descriptor of its own, so a failed write-back is reported to the committer's sync"
    )
    func fillsHaveTheirOwnDescriptor() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.preallocationBytes = 256 * 1024
            let writer = try LogWriter(configuration: configuration)
            try writer.append((0..<10).map { envelope($0) })
            let open = try #require(try segmentPaths(configuration.directory).last)
            // Linux reports a failed write-back once per open file description, to the first sync
            // that checks through it: until 2026-12-04 the fills synced through the committer's
            // descriptor and could take a frame's error, its `fdatasync` then returning 0.
            let both = descriptors(on: open)
            #expect(both.count == 2, "descriptors on the open segment: \(both)")
            if both.count == 2 {
                var flags = [fcntl(both[0], F_GETFL), fcntl(both[1], F_GETFL)]
                flags = flags.map { $0 & O_ACCMODE }
                #expect(flags == [O_WRONLY, O_WRONLY])
            }
            writer.close()
            #expect(descriptors(on: open).isEmpty, "closed with the writer")
        }
    }

    @Test("with syncs in flight, each sync thread's descriptor is opened with the segment, before any frame")
    func syncThreadsOpenWithTheSegment() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.preallocationBytes = 256 * 1024
            configuration.syncsInFlight = 2
            let writer = try LogWriter(configuration: configuration)
            // One group: one sync thread syncs it, the other never takes a group of this segment.
            // A descriptor opened only then would be opened after the frames were written, and a
            // failed write-back the preallocator's syncs had seen first would not be reported to it.
            try writer.append((0..<10).map { envelope($0) })
            let open = try #require(try segmentPaths(configuration.directory).last)
            // The committer's, the preallocator's and both sync threads'.
            #expect(descriptors(on: open).count == 4, "descriptors on the open segment: \(descriptors(on: open))")
            writer.close()
            #expect(descriptors(on: open).isEmpty, "closed with the writer")
        }
    }

    @Test("a disk cap keeps the zeros within its headroom; turned off, segments are plain appends")
    func capAndOff() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            // Zeros start a quarter chunk past the data and run a chunk: to 80 KiB without the cap.
            // (Until 2026-12-05 a 1 MiB chunk under a 64 KiB cap: the fill never started, and the
            // test held without one zero.)
            configuration.maxDiskBytes = 72 * 1024
            configuration.preallocationBytes = 64 * 1024
            let writer = try LogWriter(configuration: configuration)
            try writer.append((0..<10).map { envelope($0) })
            let open = try #require(try segmentPaths(configuration.directory).last)
            // Preallocated within the headroom: a cap that turned preallocation off passed too until
            // 2026-12-05 (this waited for zeros without asking for them).
            let preallocated = eventually { ((try? SegmentInspector.inspect(path: open).zeroTailBytes) ?? 0) > 0 }
            #expect(preallocated, "no zeros ahead of the writes in \(open)")
            let used = try LogRetention.diskUsage(directory: configuration.directory, node: configuration.node)
            let segment = (try? SegmentInspector.inspect(path: open).rendered()) ?? ""
            #expect(used <= 72 * 1024, "\(used) bytes: \(segment)")
            writer.close()

            var off = testConfiguration(dir + "/off")
            off.preallocationBytes = 0
            let plain = try LogWriter(configuration: off)
            try plain.append((0..<10).map { envelope($0) })
            let path = try #require(try segmentPaths(off.directory).last)
            let report = try SegmentInspector.inspect(path: path)
            #expect(report.zeroTailBytes == 0)
            #expect(Int64(report.frames.reduce(0) { $0 + $1.frameBytes }) == report.bytes)
            plain.close()
        }
    }
}

/// The records of one segment file, read through a scanner.
private func readFile(_ path: String) throws -> [String] {
    let scanner = try FrameScanner(path: path)
    let decompressor = FrameDecompressor()
    var records: [String] = []
    _ = try scanner.scanAll { entry in
        var text: [UInt8] = []
        _ = scanner.body.withUnsafeBytes { decompressor.decompress($0, metadata: entry.metadata, appendingTo: &text) }
        records += text.split(separator: 10).map { String(decoding: $0, as: UTF8.self) }
    }
    return records
}
