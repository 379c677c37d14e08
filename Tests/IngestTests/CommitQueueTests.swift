import EventLog
import Foundation
import Locking
import Observability
import Testing

@testable import Ingest

@Suite("Commit queue")
struct CommitQueueTests {
    /// Blocks its first append until released; refuses records containing "bad" as the log does.
    final class GateSink: EventSink, @unchecked Sendable {
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var calls = 0
        private(set) var stored: [String] = []

        func append(_ records: [[UInt8]]) throws {
            let first = lock.withLock {
                calls += 1
                return calls == 1
            }
            if first {
                entered.signal()
                gate.wait()
            }
            let lines = records.map { String(decoding: $0, as: UTF8.self) }
            if lines.contains(where: { $0.contains("bad") }) { throw LogError.invalidRecord(reason: "bad") }
            lock.withLock { stored += lines }
        }
    }

    @Test("one request's bad records do not fail the requests sharing its group")
    func isolation() throws {
        let sink = GateSink()
        let queue = CommitQueue(sink: sink, deadLetterSink: MemorySink(), committers: 1, metrics: MetricsRegistry())
        defer { queue.stop() }
        let results = Locked<[String: Bool]>([:])
        let done = DispatchSemaphore(value: 0)
        func job(_ name: String, _ record: String) -> CommitQueue.Job {
            CommitQueue.Job(records: [Array(record.utf8)], deadLetters: []) { error in
                results.withLock { $0[name] = error == nil }
                done.signal()
            }
        }
        queue.enqueue(job("first", "one"))
        sink.entered.wait()
        queue.enqueue(job("bad", "bad"))
        queue.enqueue(job("good", "two"))
        sink.gate.signal()
        for _ in 0..<3 { #expect(done.wait(timeout: .now() + 10) == .success) }
        #expect(results.withLock { $0 } == ["first": true, "bad": false, "good": true])
        #expect(sink.stored == ["one", "two"])
    }
}
