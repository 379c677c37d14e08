import Foundation
import Locking
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
            let writer = try LogWriter(configuration: configuration)
            defer { writer.close() }
            #expect(throws: LogError.tooLarge(bytes: 5001, limit: 4096)) {
                try writer.append([[UInt8](repeating: UInt8(ascii: "x"), count: 5000)])
            }
            let outcomes = Locked<(ok: Int, refused: Int)>((0, 0))
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
            #expect(ok > 0)
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
