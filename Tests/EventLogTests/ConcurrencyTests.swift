import Foundation
import Locking
import TestSupport
import Testing

@testable import EventLog

@Suite struct ConcurrencyTests {
    @Test(
        "appends from many threads are all acknowledged and each record is present exactly once",
        arguments: [Durability.fsync, .interval(.milliseconds(5))], [1, 3])
    func manyThreads(durability: Durability, compressionThreads: Int) throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.durability = durability
            configuration.compressionThreads = compressionThreads
            configuration.maxSegmentBytes = 64 * 1024  // rotate during the run too
            let writer = try LogWriter(configuration: configuration)
            let threads = 12
            let perThread = 300
            let failures = Locked<[String]>([])
            try runThreads(threads) { thread in
                for index in 0..<perThread {
                    let id = thread * perThread + index
                    let records = (0..<(1 + id % 3)).map { Array("{\"t\":\(thread),\"i\":\(index),\"k\":\($0)}".utf8) }
                    do {
                        try writer.append(records)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            let frames = writer.framesCommitted
            writer.close()
            #expect(failures.withLock { $0 }.isEmpty)
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(try sequencesAreGapFree(configuration.directory))
            let expectedCount = (0..<(threads * perThread)).reduce(0) { $0 + 1 + $1 % 3 }
            #expect(records.count == expectedCount)
            #expect(Set(records).count == expectedCount)
            #expect(frames < threads * perThread)  // group commit shared frames between appends
            // One append's records stay together and in order inside one frame.
            for (position, record) in records.enumerated() where record.hasSuffix(",\"k\":1}") {
                #expect(records[position - 1] == record.replacingOccurrences(of: ",\"k\":1}", with: ",\"k\":0}"))
            }
        }
    }

    @Test("a full queue blocks and then refuses with unavailable instead of growing without bound")
    func backpressure() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.maxPendingBytes = 4096
            configuration.enqueueTimeout = .milliseconds(1)
            // Syncs wait while the gate is closed, so the queue fills for certain: until 2026-12-05
            // nothing held the committer, and a writer without the bound passed too.
            let gateClosed = Locked(false)
            configuration.groupSync = { fd in
                while gateClosed.withLock({ $0 }) { usleep(1_000) }
                return fdatasync(fd) == 0 ? 0 : errno
            }
            let writer = try LogWriter(configuration: configuration)
            defer { writer.close() }
            #expect(throws: LogError.tooLarge(bytes: 5001, limit: 4096)) {
                try writer.append([[UInt8](repeating: UInt8(ascii: "x"), count: 5000)])
            }
            let outcomes = Locked<(ok: Int, refused: Int)>((0, 0))
            gateClosed.withLock { $0 = true }
            let opener = Thread {
                _ = eventually { outcomes.withLock { $0.refused > 0 } }
                gateClosed.withLock { $0 = false }
            }
            opener.start()
            try runThreads(16) { _ in
                for _ in 0..<20 {
                    do throws(LogError) {
                        try writer.append([[UInt8](repeating: UInt8(ascii: "a"), count: 1500)])
                        outcomes.withLock { $0.ok += 1 }
                    } catch {
                        #expect(error == .unavailable(reason: "event log queue full"))
                        outcomes.withLock { $0.refused += 1 }
                    }
                }
            }
            let (ok, refused) = outcomes.withLock { $0 }
            #expect(ok + refused == 320)
            #expect(ok > 0 && refused > 0, "ok \(ok), refused \(refused)")
            #expect(try readAll(configuration.directory).records.count == ok)
        }
    }

    @Test("ready-made NDJSON from many threads lands whole, in order, with one sequence number per line")
    func ndjsonAppends() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.maxSegmentBytes = 32 * 1024
            let writer = try LogWriter(configuration: configuration)
            let threads = 8
            let perThread = 100
            let failures = Locked<[String]>([])
            try runThreads(threads) { thread in
                for index in 0..<perThread {
                    var ndjson: [UInt8] = []
                    for line in 0..<3 { ndjson += Array("{\"t\":\(thread),\"i\":\(index),\"k\":\(line)}\n".utf8) }
                    do {
                        try writer.append(ndjson: ndjson)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            writer.close()
            #expect(failures.withLock { $0 }.isEmpty)
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(records.count == threads * perThread * 3)
            #expect(Set(records).count == records.count)
            #expect(try sequencesAreGapFree(configuration.directory))
            for (position, record) in records.enumerated() where record.hasSuffix(",\"k\":2}") {
                #expect(records[position - 2] == record.replacingOccurrences(of: ",\"k\":2}", with: ",\"k\":0}"))
            }
        }
    }

    @Test(
        "appends that do not wait are each completed once, after their records are durable, from many threads",
        arguments: [
            (Durability.fsync, 1, 4, false), (.fsync, 3, 2, false), (.fsync, 2, 1, false),
            (.interval(.milliseconds(5)), 1, 2, false), (.interval(.milliseconds(5)), 3, 2, false),
            // ingest's setting: an adaptive delay (serve's --commit-delay)
            (.fsync, 2, 1, true), (.fsync, 2, 2, true),
        ])
    func completionAppends(
        setting: (durability: Durability, compressionThreads: Int, syncsInFlight: Int, adaptiveDelay: Bool)
    ) throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.durability = setting.durability
            configuration.compressionThreads = setting.compressionThreads
            configuration.syncsInFlight = setting.syncsInFlight
            configuration.groupCommitDelay = setting.adaptiveDelay ? .microseconds(300) : .zero
            configuration.groupCommitDelayIsAdaptive = setting.adaptiveDelay
            configuration.maxSegmentBytes = 32 * 1024  // rotate during the run too
            let writer = try LogWriter(configuration: configuration)
            let threads = 8
            let perThread = 200
            let completed = Locked<(ok: Int, failed: [String])>((0, []))
            let done = DispatchSemaphore(value: 0)
            try runThreads(threads) { thread in
                for index in 0..<perThread {
                    // Sizes from one line to ~40 KiB, so both the committer and the compressors take batches.
                    let lines = index % 50 == 0 ? 600 : 1 + index % 3
                    var ndjson: [UInt8] = []
                    for line in 0..<lines { ndjson += Array("{\"t\":\(thread),\"i\":\(index),\"k\":\(line)}\n".utf8) }
                    ndjson.withUnsafeBytes { raw in
                        writer.append(ndjson: raw) { error in
                            completed.withLock { state in
                                if let error { state.failed.append("\(error)") } else { state.ok += 1 }
                            }
                            done.signal()
                        }
                    }
                }
            }
            for _ in 0..<(threads * perThread) { #expect(done.wait(timeout: .now() + 30) == .success) }
            writer.close()
            let (ok, failed) = completed.withLock { $0 }
            #expect(failed.isEmpty)
            #expect(ok == threads * perThread)
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            let expected = (0..<perThread).reduce(0) { $0 + ($1 % 50 == 0 ? 600 : 1 + $1 % 3) } * threads
            #expect(records.count == expected)
            #expect(Set(records).count == expected)
            #expect(try sequencesAreGapFree(configuration.directory))
        }
    }

    @Test("a queue deeper than maxBatchBytes becomes frames of at most that size plus one append, every append whole")
    func deepQueueIsCutIntoBatches() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.groupCommitDelay = .zero
            configuration.groupCommitBytes = 2 * 1024
            configuration.maxBatchBytes = 8 * 1024
            // Slow syncs: the pipeline's jobs fill up and the appends below wait in the queue.
            configuration.groupSync = { fd in
                usleep(20_000)
                return fdatasync(fd) == 0 ? 0 : errno
            }
            let writer = try LogWriter(configuration: configuration)
            let appends = 400
            let linesPerAppend = 10
            let completed = Locked<(ok: Int, failed: [String])>((0, []))
            let done = DispatchSemaphore(value: 0)
            var largestAppend = 0
            for index in 0..<appends {
                var ndjson: [UInt8] = []
                for line in 0..<linesPerAppend {
                    ndjson += Array(
                        "{\"i\":\(index),\"k\":\(line),\"pad\":\"\(String(repeating: "x", count: 80))\"}\n".utf8)
                }
                largestAppend = max(largestAppend, ndjson.count)
                ndjson.withUnsafeBytes { raw in
                    writer.append(ndjson: raw) { error in
                        completed.withLock { state in
                            if let error { state.failed.append("\(error)") } else { state.ok += 1 }
                        }
                        done.signal()
                    }
                }
            }
            for _ in 0..<appends { #expect(done.wait(timeout: .now() + 60) == .success) }
            writer.close()
            let (ok, failed) = completed.withLock { $0 }
            #expect(failed.isEmpty)
            #expect(ok == appends)
            let frames = try SegmentInspector.list(directory: configuration.directory).flatMap(\.frames)
            #expect(frames.allSatisfy { $0.problem == nil })
            // Each frame is one batch: closed once it reached maxBatchBytes, so never larger than
            // that plus the append that reached it ...
            let sizes = frames.map(\.uncompressedBytes)
            #expect(sizes.allSatisfy { $0 < configuration.maxBatchBytes + largestAppend }, "frame sizes \(sizes)")
            // ... and the queue did grow past it (else this test would not test the cut).
            #expect(sizes.filter { $0 >= configuration.maxBatchBytes }.count >= 10, "frame sizes \(sizes)")
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(records.count == appends * linesPerAppend)
            #expect(Set(records).count == records.count)
            #expect(try sequencesAreGapFree(configuration.directory))
            // In append order, each append's lines together.
            let keys = records.map { record in
                record.split(separator: ",").prefix(2).joined(separator: ",")
            }
            let expected = (0..<appends).flatMap { index in (0..<linesPerAppend).map { "{\"i\":\(index),\"k\":\($0)" } }
            #expect(keys == expected)
        }
    }

    @Test(
        "sync threads sync through descriptors of their own, so a failed write-back is reported to the group it belongs to"
    )
    func syncersHaveTheirOwnDescriptors() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.groupCommitDelay = .zero
            configuration.syncsInFlight = 2
            configuration.preallocationBytes = 0  // no zero-fill descriptor on the segment
            let synced = Locked<Set<Int32>>([])
            configuration.groupSync = { fd in
                synced.withLock { _ = $0.insert(fd) }
                return fdatasync(fd) == 0 ? 0 : errno
            }
            let writer = try LogWriter(configuration: configuration)
            let failures = Locked(0)
            try runThreads(4) { thread in
                for index in 0..<20 {
                    do { try writer.append([Array("{\"t\":\(thread),\"i\":\(index)}".utf8)]) } catch {
                        failures.withLock { $0 += 1 }
                    }
                }
            }
            #expect(failures.withLock { $0 } == 0)
            let open = try #require(try segmentPaths(configuration.directory).last)
            let onSegment = Set(descriptors(on: open))
            let syncers = synced.withLock { $0 }
            // Linux reports a failed write-back once per open file description: until 2026-12-04
            // the sync threads synced through the committer's, so one could take another group's
            // error. Now each has its own, opened with the segment (so both are open even when one
            // thread synced every group), and the committer's is not among them.
            #expect(!syncers.isEmpty && syncers.isSubset(of: onSegment), "synced \(syncers), open \(onSegment)")
            #expect(onSegment.count == 3, "the committer's and two sync threads': \(onSegment)")
            #expect(syncers.count <= 2, "the committer's descriptor was synced by a sync thread")
            writer.close()
            #expect(descriptors(on: open).isEmpty, "closed with the writer")
        }
    }

    @Test(
        "a failed sync fails its group and every later one in flight; acknowledged records stay, the log stays gap-free",
        arguments: [1, 2])
    func failedSync(syncsInFlight: Int) throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.groupCommitDelay = .zero
            configuration.retryAfter = .milliseconds(1)
            // 1: the committer syncs; 2: sync threads, with later groups in flight when a sync fails.
            configuration.syncsInFlight = syncsInFlight
            let calls = Locked(0)
            configuration.groupSync = { fd in
                let call = calls.withLock { count -> Int in
                    count += 1
                    return count
                }
                if call % 5 == 3 { return EIO }
                return fdatasync(fd) == 0 ? 0 : errno
            }
            let writer = try LogWriter(configuration: configuration)
            let threads = 8
            let perThread = 60
            let outcomes = Locked<(ok: Set<String>, failed: Int)>(([], 0))
            try runThreads(threads) { thread in
                // Each thread waits for its append before the next, so the run makes many groups.
                let done = DispatchSemaphore(value: 0)
                for index in 0..<perThread {
                    let line = "{\"t\":\(thread),\"i\":\(index)}"
                    Array((line + "\n").utf8).withUnsafeBytes { raw in
                        writer.append(ndjson: raw) { error in
                            outcomes.withLock { state in
                                if error == nil { state.ok.insert(line) } else { state.failed += 1 }
                            }
                            done.signal()
                        }
                    }
                    #expect(done.wait(timeout: .now() + 30) == .success)
                }
            }
            writer.close()
            let (ok, failed) = outcomes.withLock { $0 }
            #expect(ok.count + failed == threads * perThread)
            #expect(failed > 0)
            #expect(calls.withLock { $0 } >= 3)
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(Set(records) == ok)  // every acknowledged record, and none that failed
            #expect(records.count == ok.count)
            #expect(try sequencesAreGapFree(configuration.directory))
        }
    }

    @Test("an adaptive commit delay holds a batch only for company the batch before had, never a lone appender")
    func adaptiveDelayLoneAppender() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            // Far longer than the wait below: an append held for the delay is not back in time.
            configuration.groupCommitDelay = .seconds(3600)
            configuration.groupCommitDelayIsAdaptive = true
            let writer = try LogWriter(configuration: configuration)
            let failures = Locked<[String]>([])
            let finished = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                for id in 0..<20 {
                    do { try writer.append([envelope(id)]) } catch { failures.withLock { $0.append("\(error)") } }
                }
                finished.signal()
            }
            let returned = finished.wait(timeout: .now() + 60) == .success
            #expect(returned, "an append waited for company")
            // Each append returned durable before the next was made: one frame each.
            let frames = writer.framesCommitted
            writer.close()  // commits a held append at once, when the check above failed
            if !returned { _ = finished.wait(timeout: .now() + 60) }
            #expect(failures.withLock { $0 }.isEmpty)
            #expect(frames == 20)
            #expect(try readAll(configuration.directory).records.count == 20)
        }
    }

    @Test("an append that cannot be queued completes at once with the error, and nothing is written")
    func completionErrors() throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir)
            let writer = try LogWriter(configuration: configuration)
            let errors = Locked<[LogError?]>([])
            func append(_ text: String) {
                Array(text.utf8).withUnsafeBytes { raw in
                    writer.append(ndjson: raw) { error in errors.withLock { $0.append(error) } }
                }
            }
            append("{\"a\":1}")  // no final newline
            #expect(errors.withLock { $0 } == [.invalidRecord(reason: "NDJSON must end with a newline")])
            writer.close()
            append("{\"a\":2}\n")
            #expect(errors.withLock { $0 }.last == .unavailable(reason: "event log closed"))
            #expect(try readAll(configuration.directory).records.isEmpty)
        }
    }
}

/// True when every frame's first sequence number continues the previous frame's (the log is gap-free).
func sequencesAreGapFree(_ directory: String) throws -> Bool {
    var expected: UInt64 = 0
    for path in try segmentPaths(directory) {
        for frame in try SegmentInspector.inspect(path: path).frames {
            guard frame.firstSequence == expected else { return false }
            expected += UInt64(frame.records)
        }
    }
    return true
}
