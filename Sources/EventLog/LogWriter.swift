import Foundation
import Observability

/// Appends records to a node's log with group commit.
///
/// Concurrency: any number of threads call `append`; their records are copied into one pending
/// NDJSON buffer under a lock. One writer thread takes the whole buffer as one frame, compresses,
/// writes and syncs it, then wakes every append that joined that frame. Pending bytes are bounded
/// (`maxPendingBytes`): a full queue blocks appends up to `enqueueTimeout`, then fails them with
/// `.unavailable`.
package final class LogWriter: Sendable {
    /// State shared by appenders and the writer thread; only touched under the monitor's lock.
    private final class Shared {
        var pending: [UInt8] = []
        var pendingRecords = 0
        /// Monotonic ns when the first record of the pending batch arrived.
        var pendingSince: UInt64?
        var batch = Batch()
        var isClosing = false
        var hasExited = false
        /// After a failed commit: new appends fail fast with `lastError` until this monotonic time.
        var failedUntil: UInt64?
        var lastError: LogError?
        /// Frames committed since start (tests and benchmarks read it).
        var frames = 0
    }

    /// One group commit; appenders that joined it wait for `isDone`. Only touched under the lock.
    private final class Batch {
        var isDone = false
        var error: LogError?
    }

    private enum Condition {
        static let work = 0  // the writer thread waits for records
        static let done = 1  // appenders wait for their batch
        static let space = 2  // appenders wait for queue space
    }

    /// The configuration in effect (validated).
    package let configuration: LogConfiguration
    private let monitor: Monitor<Shared>
    private let core: WriterCore
    private let metrics: LogMetrics
    private let pendingLimit: Int
    private let commitDelayNanos: UInt64

    /// Opens the node's log, recovering the open segment (a torn tail is cut and logged), and
    /// starts the writer thread. Frames go to a new segment. Call `close()` when done: the writer
    /// thread keeps the writer alive until then.
    /// - Throws: `LogError.io` when the directory cannot be created or read, `.invalidConfiguration`,
    ///   `.unavailable` when another process writes to the same node directory.
    package init(configuration: LogConfiguration) throws(LogError) {
        let configuration = try configuration.validated()
        self.configuration = configuration
        metrics = LogMetrics(configuration: configuration)
        let lockFD = try WriterCore.lockDirectory(configuration.nodeDirectory)
        let recovered: Recovery.Result
        do {
            _ = try LogIdentity.ensure(nodeDirectory: configuration.nodeDirectory)
            recovered = try Recovery.run(nodeDirectory: configuration.nodeDirectory)
            core = try WriterCore(configuration: configuration, lockFD: lockFD, recovered: recovered, metrics: metrics)
        } catch {
            Glibc.close(lockFD)
            throw error
        }
        pendingLimit = min(configuration.maxPendingBytes, configuration.maxFrameBytes)
        commitDelayNanos = UInt64(max(0, configuration.groupCommitDelay.microseconds)) * 1000
        let shared = Shared()
        shared.pending.reserveCapacity(configuration.groupCommitBytes * 2)
        monitor = Monitor(shared, conditions: 3)
        let thread = Thread { [self] in self.runWriter() }
        thread.name = "eventlog-writer"
        thread.start()
    }

    /// Appends records (each one envelope line without the newline) as part of one group commit and
    /// returns once they are durable under the configured durability mode. Thread-safe; blocks.
    /// The records of one call land in one frame, in order, all or none.
    /// - Throws: `.diskFull` or `.unavailable` (answer 503 and retry later), `.io` on a failed write,
    ///   `.tooLarge` when the records exceed `maxFrameBytes`, `.invalidRecord` for a newline in a record.
    package func append(_ records: [[UInt8]]) throws(LogError) {
        guard !records.isEmpty else { return }
        let start = ContinuousClock.now
        var total = 0
        for record in records {
            let hasNewline = record.withUnsafeBytes { raw in raw.baseAddress.map { memchr($0, 10, raw.count) != nil } ?? false }
            if hasNewline { throw .invalidRecord(reason: "record contains a newline") }
            total += record.count + 1
        }
        if total > pendingLimit { throw .tooLarge(bytes: total, limit: pendingLimit) }
        try monitor.withLock { (shared) throws(LogError) in
            let now = Monitor<Shared>.monotonicNow()
            if shared.isClosing { throw .unavailable(reason: "event log closed") }
            if let until = shared.failedUntil, now < until, let error = shared.lastError { throw error }
            let deadline = now + UInt64(max(0, configuration.enqueueTimeout.microseconds)) * 1000
            while shared.pending.count + total > pendingLimit {
                if Monitor<Shared>.monotonicNow() >= deadline { throw .unavailable(reason: "event log queue full") }
                monitor.wait(Condition.space, deadline: deadline)
                if shared.isClosing { throw .unavailable(reason: "event log closed") }
            }
            for record in records {
                shared.pending.append(contentsOf: record)
                shared.pending.append(10)
            }
            shared.pendingRecords += records.count
            if shared.pendingSince == nil {
                shared.pendingSince = now
                monitor.signal(Condition.work)
            } else if shared.pending.count >= configuration.groupCommitBytes {
                monitor.signal(Condition.work)
            }
            let batch = shared.batch
            while !batch.isDone { monitor.wait(Condition.done) }
            if let error = batch.error { throw error }
        }
        metrics.appendSeconds.observe(since: start)
    }

    /// True while appends are expected to succeed (for `/readyz`): not closed and no recent failure.
    package var isWritable: Bool {
        monitor.withLock { shared in
            if shared.isClosing { return false }
            if let until = shared.failedUntil { return Monitor<Shared>.monotonicNow() >= until }
            return true
        }
    }

    /// Frames committed by this writer since it started.
    package var framesCommitted: Int { monitor.withLock { $0.frames } }

    /// Commits what is pending, stops the writer thread and closes the segment. Later appends fail
    /// with `.unavailable`. Safe to call more than once.
    package func close() {
        monitor.withLock { shared in
            shared.isClosing = true
            monitor.broadcast(Condition.work)
            monitor.broadcast(Condition.space)
            while !shared.hasExited { monitor.wait(Condition.done) }
        }
    }

    deinit { close() }

    private func runWriter() {
        var spare: [UInt8] = []
        spare.reserveCapacity(configuration.groupCommitBytes * 2)
        while case (var buffer, let records, let batch)? = nextBatch(swapping: &spare) {
            let error = core.commit(buffer, records: records)
            if error != nil { metrics.failures.increment() }
            swap(&spare, &buffer)
            buffer = []
            spare.removeAll(keepingCapacity: true)
            monitor.withLock { shared in
                batch.isDone = true
                batch.error = error
                shared.frames += error == nil ? 1 : 0
                if let error {
                    let retry = UInt64(max(0, configuration.retryAfter.microseconds)) * 1000
                    shared.failedUntil = Monitor<Shared>.monotonicNow() + retry
                    shared.lastError = error
                } else {
                    shared.failedUntil = nil
                    shared.lastError = nil
                }
                monitor.broadcast(Condition.done)
            }
        }
        core.close()
        monitor.withLock { shared in
            shared.hasExited = true
            monitor.broadcast(Condition.done)
        }
    }

    /// Waits until a batch is due (size, delay or closing) and takes it; nil when closed and drained.
    /// While idle, performs interval syncs when due.
    private func nextBatch(swapping spare: inout [UInt8]) -> ([UInt8], Int, Batch)? {
        while true {
            let syncIn = core.nanosUntilSync()
            let taken: ([UInt8], Int, Batch)?? = monitor.withLock { shared in
                let now = Monitor<Shared>.monotonicNow()
                guard let since = shared.pendingSince else {
                    if shared.isClosing { return .some(nil) }
                    if syncIn == 0 { return nil }
                    monitor.wait(Condition.work, deadline: syncIn.map { now + $0 })
                    return nil
                }
                let due = since + commitDelayNanos
                if shared.pending.count < configuration.groupCommitBytes, now < due, !shared.isClosing {
                    monitor.wait(Condition.work, deadline: due)
                    return nil
                }
                swap(&shared.pending, &spare)
                let batch = shared.batch
                let records = shared.pendingRecords
                shared.batch = Batch()
                shared.pendingRecords = 0
                shared.pendingSince = nil
                monitor.broadcast(Condition.space)
                return .some((spare, records, batch))
            }
            switch taken {
            case .some(.some(let work)):
                spare = []
                return work
            case .some(.none):
                return nil
            case .none:
                core.syncIfDue()
            }
        }
    }
}
