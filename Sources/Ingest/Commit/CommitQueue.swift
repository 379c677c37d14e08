import Dispatch
import EventLog
import EventModel
import Foundation
import Locking
import Observability
import Synchronization

/// Hands finished requests' records to the sinks in groups. Requests enqueue and return to their
/// event loop (the connection is suspended); a few committer threads take everything queued, make
/// one `append` per sink, and complete every request in the group. While one group is being made
/// durable the next one accumulates, so many requests share one fsync. Requests without dead
/// letters bypass it when the sink is a `CompletingEventSink` (see `IngestService.finish`).
final class CommitQueue: Sendable {
    /// One request's records and what to do once they are durable (or not).
    struct Job: Sendable {
        /// The accepted envelope lines, each followed by a newline (not written to any more).
        let ndjson: LineBuffer
        var deadLetters: [[UInt8]]
        var completion: @Sendable (_ error: (any Error)?) -> Void
        /// Bytes this job adds to a group's appends.
        let byteCount: Int
        /// When the job was created (just before it is queued).
        let queuedAt = MonotonicInstant.now

        init(
            ndjson: LineBuffer, deadLetters: [[UInt8]], completion: @escaping @Sendable (_ error: (any Error)?) -> Void
        ) {
            self.ndjson = ndjson
            self.deadLetters = deadLetters
            self.completion = completion
            byteCount = ndjson.count + deadLetters.reduce(0) { $0 + $1.count + 1 }
        }

        /// `records` given one by one (each a line without its newline).
        init(
            records: [[UInt8]], deadLetters: [[UInt8]], completion: @escaping @Sendable (_ error: (any Error)?) -> Void
        ) {
            let ndjson = LineBuffer(capacity: records.reduce(0) { $0 + $1.count + 1 })
            for record in records { ndjson.appendLine(record) }
            self.init(ndjson: ndjson, deadLetters: deadLetters, completion: completion)
        }

        /// Lines in `ndjson`.
        var records: Int { ndjson.lines }
    }

    /// Most bytes (records and dead letters) in one group's appends. The group's NDJSON is copied
    /// into one buffer per committer, so this bounds that buffer; the log merges the groups of
    /// concurrent committers into one frame anyway, so larger groups would not save fsyncs.
    private let maxGroupBytes = 1 << 20

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
    private let queueWait: Histogram
    private let groupSize: Histogram
    private let deadLetterFailures: Counter
    private let appendFailures: Counter
    private let isFailing = Atomic<Bool>(false)
    private let isDeadLetterFailing = Atomic<Bool>(false)

    /// `committers`: threads blocked in `append` at once. More than two keeps the next group
    /// entering the log while the current one is in fsync, even when the log waits
    /// `groupCommitDelay` before a commit.
    init(sink: any EventSink, deadLetterSink: any EventSink, committers: Int = 4, metrics: MetricsRegistry) {
        self.sink = sink
        self.deadLetterSink = deadLetterSink
        self.committers = committers
        appendLatency = metrics.histogram(
            "ingest_commit_duration_seconds", help: "Time for one group of requests to become durable")
        queueWait = metrics.histogram(
            "ingest_commit_wait_seconds", help: "Time a finished request waits for a committer thread")
        groupSize = metrics.histogram(
            "ingest_commit_group_requests", help: "Requests sharing one append",
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
        deadLetterFailures = metrics.counter(
            "ingest_dead_letter_failures_total", help: "Dead-letter records that could not be written")
        appendFailures = metrics.counter(
            "ingest_append_failures_total", help: "Accepted events answered 503 because the log failed")
        for index in 0..<committers {
            Thread.startNamed("commit-\(index)") { [self] in run() }
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
        // This committer's buffer for a group's NDJSON, reused (its capacity stays near
        // `maxGroupBytes`, instead of a fresh allocation of that size per group).
        var scratch: [UInt8] = []
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
            if !group.isEmpty { commit(group, scratch: &scratch) }
            if isStopped, state.withLock({ $0.jobs.isEmpty }) {
                stopped.signal()
                return
            }
        }
    }

    private func commit(_ group: [Job], scratch: inout [UInt8]) {
        let start = MonotonicInstant.now
        for job in group { queueWait.observe(Double(start.nanoseconds &- job.queuedAt.nanoseconds) / 1e9) }
        let deadLetters = group.flatMap(\.deadLetters)
        if !deadLetters.isEmpty {
            // Counted always, logged once per outage (as the event log's failures): at its disk
            // cap, under a flood of bad bodies, the dead-letter log refuses every group.
            do {
                try deadLetterSink.append(deadLetters)
                if Self.outageChanged(isDeadLetterFailing, failed: false) {
                    logger.notice("deadletter.append_recovered", [:])
                }
            } catch {
                deadLetterFailures.increment(by: deadLetters.count)
                if Self.outageChanged(isDeadLetterFailing, failed: true) {
                    logger.error(
                        "deadletter.append_failed", ["records": String(deadLetters.count), "error": "\(error)"])
                }
            }
        }
        var failures: [(any Error)?] = Array(repeating: nil, count: group.count)
        let records = group.reduce(0) { $0 + $1.records }
        let appended: (any Error)?
        if group.count == 1 {
            appended = group[0].ndjson.withUnsafeBytes { append($0, records: records) }
        } else {
            scratch.removeAll(keepingCapacity: true)
            for job in group { job.ndjson.withUnsafeBytes { scratch.append(contentsOf: $0) } }
            appended = scratch.withUnsafeBytes { append($0, records: records) }
            if scratch.capacity > 2 * maxGroupBytes { scratch = [] }  // one huge request: do not keep it
        }
        if let error = appended {
            if group.count > 1, Self.isRecordError(error) {
                // One request's records must not fail the others that share its group.
                for (index, job) in group.enumerated() {
                    failures[index] = job.ndjson.withUnsafeBytes { append($0, records: job.records) }
                }
            } else {
                failures = Array(repeating: error, count: group.count)
            }
        }
        appendLatency.observe(since: start)
        groupSize.observe(Double(group.count))
        for (job, failure) in zip(group, failures) {
            job.completion(job.records == 0 ? nil : failure)
        }
    }

    /// Appends `ndjson` (`records` lines) to the event log; returns the error, logged once per outage.
    private func append(_ ndjson: UnsafeRawBufferPointer, records: Int) -> (any Error)? {
        guard records > 0 else { return nil }
        do {
            try sink.append(ndjson: ndjson)
            noteAppend(error: nil, records: records)
            return nil
        } catch {
            noteAppend(error: error, records: records)
            return error
        }
    }

    /// Counts and logs the outcome of an append of `records` accepted events (also for appends
    /// made without the queue, through a `CompletingEventSink`): failures are counted, and logged
    /// once per outage, not per group (they come every few milliseconds), as is the recovery.
    func noteAppend(error: (any Error)?, records: Int) {
        if let error {
            appendFailures.increment(by: records)
            if Self.outageChanged(isFailing, failed: true) {
                logger.error("log.append_failed", ["records": String(records), "error": "\(error)"])
            }
        } else if Self.outageChanged(isFailing, failed: false) {
            logger.notice("log.append_recovered", [:])
        }
    }

    /// Records an outcome in an outage flag; true when it starts an outage (the first failure) or
    /// ends one (the first success after failures), the two moments worth a log line. A success
    /// with no outage costs one load, no read-modify-write.
    private static func outageChanged(_ isFailing: borrowing Atomic<Bool>, failed: Bool) -> Bool {
        if failed { return !isFailing.exchange(true, ordering: .relaxed) }
        return isFailing.load(ordering: .relaxed) && isFailing.exchange(false, ordering: .relaxed)
    }

    /// Errors caused by the records themselves rather than by the log's state.
    static func isRecordError(_ error: any Error) -> Bool {
        switch error as? LogError {
        case .invalidRecord, .tooLarge: true
        default: false
        }
    }
}
