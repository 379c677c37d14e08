import Dispatch
import EventLog
import Foundation
import Observability
import Synchronization
import Locking

/// Hands finished requests' records to the sinks in groups. Requests enqueue and return to their
/// event loop (the connection is suspended); a few committer threads take everything queued, make
/// one `append` per sink, and complete every request in the group. While one group is being made
/// durable the next one accumulates, so many requests share one fsync.
final class CommitQueue: Sendable {
    /// One request's records and what to do once they are durable (or not).
    struct Job: Sendable {
        var records: [[UInt8]]
        var deadLetters: [[UInt8]]
        var completion: @Sendable (_ error: (any Error)?) -> Void
        /// Bytes this job adds to a group's appends.
        let byteCount: Int

        init(
            records: [[UInt8]], deadLetters: [[UInt8]], completion: @escaping @Sendable (_ error: (any Error)?) -> Void
        ) {
            self.records = records
            self.deadLetters = deadLetters
            self.completion = completion
            byteCount = records.reduce(0) { $0 + $1.count + 1 } + deadLetters.reduce(0) { $0 + $1.count + 1 }
        }
    }

    /// Most bytes (records and dead letters) in one group's appends.
    private let maxGroupBytes = 8 << 20

    private struct State {
        var jobs: [Job] = []
        var isStopped = false
        var running = 0
    }

    private let sink: any EventSink
    private let deadLetterSink: any EventSink
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let committers: Int
    private let logger = Logger(label: "ingest")
    private let appendLatency: Histogram
    private let groupSize: Histogram
    private let deadLetterFailures: Counter
    private let appendFailures: Counter
    private let isFailing = Atomic<Bool>(false)

    /// `committers`: threads blocked in `append` at once. More than two keeps the next group
    /// entering the log while the current one is in fsync, even when the log waits
    /// `groupCommitDelay` before a commit.
    init(sink: any EventSink, deadLetterSink: any EventSink, committers: Int = 4, metrics: MetricsRegistry) {
        self.sink = sink
        self.deadLetterSink = deadLetterSink
        self.committers = committers
        appendLatency = metrics.histogram(
            "ingest_commit_duration_seconds", help: "Time for one group of requests to become durable")
        groupSize = metrics.histogram(
            "ingest_commit_group_requests", help: "Requests sharing one append",
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
        deadLetterFailures = metrics.counter(
            "ingest_dead_letter_failures_total", help: "Dead-letter records that could not be written")
        appendFailures = metrics.counter(
            "ingest_append_failures_total", help: "Accepted events answered 503 because the log failed")
        for index in 0..<committers {
            let thread = Thread { [self] in run() }
            thread.name = "ingest.commit.\(index)"
            thread.start()
        }
        state.withLock { $0.running = committers }
    }

    /// Queues a job; its completion runs on a committer thread. After `stop()` it completes at once
    /// with `IngestError.shuttingDown`.
    func enqueue(_ job: Job) {
        let accepted = state.withLock { state -> Bool in
            guard !state.isStopped else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wake.signal() } else { job.completion(IngestError.shuttingDown) }
    }

    /// Commits what is queued, then stops the committer threads.
    func stop() {
        let running = state.withLock { state -> Int in
            guard !state.isStopped else { return 0 }
            state.isStopped = true
            return state.running
        }
        for _ in 0..<running { wake.signal() }
        for _ in 0..<running { stopped.wait() }
    }

    private func run() {
        while true {
            wake.wait()
            let (group, isStopped, hasMore) = state.withLock { state in
                // Take jobs up to `maxGroupBytes` (at least one), so one append stays well inside
                // the log's frame limit; the rest goes to the next round.
                var bytes = 0
                var taken = 0
                for job in state.jobs {
                    let size = job.byteCount
                    if taken > 0, bytes + size > maxGroupBytes { break }
                    bytes += size
                    taken += 1
                }
                let jobs = Array(state.jobs.prefix(taken))
                state.jobs.removeFirst(taken)
                return (jobs, state.isStopped, !state.jobs.isEmpty)
            }
            if hasMore { wake.signal() }
            if !group.isEmpty { commit(group) }
            if isStopped, state.withLock({ $0.jobs.isEmpty }) {
                stopped.signal()
                return
            }
        }
    }

    private func commit(_ group: [Job]) {
        let start = ContinuousClock.now
        let deadLetters = group.flatMap(\.deadLetters)
        if !deadLetters.isEmpty {
            do {
                try deadLetterSink.append(deadLetters)
            } catch {
                deadLetterFailures.increment(by: deadLetters.count)
                logger.error("deadletter.append_failed", ["records": String(deadLetters.count), "error": "\(error)"])
            }
        }
        var failures: [(any Error)?] = Array(repeating: nil, count: group.count)
        if let error = append(group.flatMap(\.records)) {
            if group.count > 1, Self.isRecordError(error) {
                // One request's records must not fail the others that share its group.
                for (index, job) in group.enumerated() { failures[index] = append(job.records) }
            } else {
                failures = Array(repeating: error, count: group.count)
            }
        }
        appendLatency.observe(since: start)
        groupSize.observe(Double(group.count))
        for (job, failure) in zip(group, failures) {
            job.completion(job.records.isEmpty ? nil : failure)
        }
    }

    /// Appends `records` to the event log; returns the error, logged once per outage.
    private func append(_ records: [[UInt8]]) -> (any Error)? {
        guard !records.isEmpty else { return nil }
        do {
            try sink.append(records)
            if isFailing.exchange(false, ordering: .relaxed) { logger.notice("log.append_recovered", [:]) }
            return nil
        } catch {
            appendFailures.increment(by: records.count)
            // One line per outage, not per group: failures come every few milliseconds.
            if !isFailing.exchange(true, ordering: .relaxed) {
                logger.error("log.append_failed", ["records": String(records.count), "error": "\(error)"])
            }
            return error
        }
    }

    /// Errors caused by the records themselves rather than by the log's state.
    static func isRecordError(_ error: any Error) -> Bool {
        switch error as? LogError {
        case .invalidRecord, .tooLarge: true
        default: false
        }
    }
}
