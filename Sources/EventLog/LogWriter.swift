import Foundation
import Observability

/// Appends records to a node's log with group commit.
///
/// Concurrency: any number of threads call `append`; their records are copied into one pending
/// NDJSON buffer under a lock. A pipeline turns pending batches into durable frames:
/// `compressionThreads` compressor threads each take the oldest waiting batch (the whole pending
/// buffer, or a batch closed when it reached `maxBatchBytes`, so a deep queue is shared out in
/// frames of about that size), stamped with a ticket (the order it left the queue), and compress
/// it; one committer thread takes the compressed frames strictly in ticket order and writes every
/// frame that is ready (when nothing else is in flight it compresses a due batch itself). With fsync
/// durability the committer covers the group with one `fdatasync` itself and wakes its appenders
/// (one sync in flight, the default); with `syncsInFlight` of 2 or more the group goes to one of
/// that many sync threads while the committer writes the next group, and groups are acknowledged
/// strictly in write order (interval durability: the committer syncs when due). So the next frames
/// are compressed (and, with sync threads, written) while the previous ones are synced, and an
/// append still returns only after a sync covering its frame and every earlier one. Pending bytes
/// are bounded (`maxPendingBytes`): a full queue blocks appends up to `enqueueTimeout`, then fails
/// them with `.unavailable`.
package final class LogWriter: Sendable {
    /// State shared by appenders and the pipeline threads; only touched under the monitor's lock.
    /// What every append touches is `@exclusivity(unchecked)`: the lock already makes the accesses
    /// exclusive, and the run-time check of each (~80 instructions, a few per append) guards only
    /// against overlapping accesses by one thread, which the code under the lock does not make.
    final class Shared {
        /// The open batch: appends are copied here until a compressor (or the committer) takes it,
        /// or it reaches `maxBatchBytes` and is closed.
        @exclusivity(unchecked) var pending: [UInt8] = []
        @exclusivity(unchecked) var pendingRecords = 0
        /// Appends in the open batch, and in the batch taken before it (`groupCommitDelayIsAdaptive`).
        @exclusivity(unchecked) var pendingAppends = 0
        @exclusivity(unchecked) var lastBatchAppends = 0
        /// Monotonic ns when the first record of the pending batch arrived.
        @exclusivity(unchecked) var pendingSince: UInt64?
        @exclusivity(unchecked) var batch = CommitBatch(slot: 0)
        /// Batches closed at `maxBatchBytes`, oldest first; taken before the open one.
        var closed: [ClosedBatch] = []
        /// Bytes in `closed` (they count against the pending limit).
        @exclusivity(unchecked) var closedBytes = 0
        /// Emptied buffers (with their capacity) for the next batches to close; at most
        /// `maxSpareBuffers`, so a burst's buffers do not stay allocated after it.
        var spareBuffers: [[UInt8]] = []
        /// Batches created so far; picks each batch's condition slot.
        var batchCount = 0
        /// Jobs no stage holds; a compressor needs one to take a batch (bounds memory).
        var freeJobs: [FrameJob] = []
        var nextTicket: UInt64 = 0
        /// Compressed frames waiting for the committer, in any order.
        var ready: [FrameJob] = []
        /// Frames the committer took and has not finished yet.
        var committing = 0
        /// Ticket of the next frame to commit.
        var nextCommit: UInt64 = 0
        var runningCompressors = 0
        var isClosing = false
        var hasExited = false
        /// After a failed commit: new appends fail fast with `lastError` until this monotonic time.
        var failedUntil: UInt64?
        var lastError: LogError?
        /// Frames committed since start (tests and benchmarks read it).
        var frames = 0
        /// Fsync durability: groups written and not yet acknowledged, in write order; the sync
        /// threads sync them (several at once) and acknowledge them strictly in this order.
        var syncs: [WrittenGroup] = []
        /// Sync threads inside `fdatasync`.
        var syncsRunning = 0
        /// Monotonic ns when the latest sync started, and a moving average of how long syncs take
        /// (the committer staggers the syncs in flight by a share of it).
        var lastSyncStart: UInt64?
        var syncEstimate: UInt64 = 1_000_000
        /// Set by the committer as it ends: the sync threads end too.
        var stopSyncers = false
        var runningSyncers = 0
    }

    /// A batch closed at `maxBatchBytes`, waiting for a compressor with its appenders.
    struct ClosedBatch {
        var ndjson: [UInt8]
        let records: Int
        let since: UInt64
        let batch: CommitBatch
    }

    enum Condition {
        static let work = 0  // compressors wait for a due batch and a free job
        static let space = 1  // appenders wait for queue space
        static let ready = 2  // the committer waits for the next frame in ticket order
        static let exited = 3  // close() waits for the pipeline to end
        static let sync = 4  // sync threads wait for a written group
        /// Appenders wait for their batch on `firstDone + batch.slot`: with a few batches in flight,
        /// finishing one wakes only its own appenders, not every waiting thread.
        static let firstDone = 5
        static let doneSlots = 8
    }

    /// The configuration in effect (validated).
    package let configuration: LogConfiguration
    let monitor: Monitor<Shared>
    let core: WriterCore
    let metrics: LogMetrics
    private let pendingLimit: Int
    /// `configuration.enqueueTimeout` in nanoseconds, converted once (not on every append).
    private let enqueueTimeoutNanos: UInt64
    let commitDelayNanos: UInt64
    /// The largest batch the deep-queue rule waits for (4 MiB).
    let deepBatchBytes = 4 << 20
    /// The open batch is closed once it holds this many bytes (`configuration.maxBatchBytes`).
    let maxBatchBytes: Int
    /// Fsync durability with `configuration.syncsInFlight` of 2 or more: that many sync threads.
    /// The committer writes the next group while earlier groups are being synced; this disk
    /// completes several times more small syncs per second with concurrent syncers than with one
    /// (`bench/eventlog/fsync-overlap.c`). 0 otherwise: the committer syncs each group itself
    /// (fsync durability with one sync in flight, where a sync thread would only add two thread
    /// hand-offs per group: the committer could not write the next group before the sync ended
    /// anyway), or when due (interval durability).
    let syncThreads: Int

    /// Opens the node's log, recovering the open segment (a torn tail is cut and logged), and
    /// starts the compressor and committer threads. Frames go to a new segment. Call `close()`
    /// when done: the threads keep the writer alive until then.
    /// - Throws: `LogError.io` when the directory cannot be created or read, `.invalidConfiguration`,
    ///   `.unavailable` when another process writes to the same node directory.
    package init(configuration: LogConfiguration) throws(LogError) {
        let configuration = try configuration.validated()
        self.configuration = configuration
        metrics = LogMetrics(configuration: configuration)
        var encoders: [FrameEncoder] = []
        // One encoder per compressor thread, and one for the committer (small batches while idle).
        for _ in 0...configuration.compressionThreads {
            encoders.append(try FrameEncoder(codec: configuration.codec, level: configuration.compressionLevel))
        }
        let lockFD = try WriterCore.lockDirectory(configuration.nodeDirectory)
        let recovered: Recovery.Result
        do {
            _ = try LogIdentity.ensure(nodeDirectory: configuration.nodeDirectory)
            recovered = try Recovery.run(nodeDirectory: configuration.nodeDirectory)
        } catch {
            Glibc.close(lockFD)
            throw error
        }
        core = WriterCore(configuration: configuration, lockFD: lockFD, recovered: recovered, metrics: metrics)
        pendingLimit = min(configuration.maxPendingBytes, configuration.maxFrameBytes)
        enqueueTimeoutNanos = UInt64(max(0, configuration.enqueueTimeout.microseconds)) * 1000
        commitDelayNanos = UInt64(max(0, configuration.groupCommitDelay.microseconds)) * 1000
        maxBatchBytes = max(configuration.maxBatchBytes, configuration.groupCommitBytes)
        let shared = Shared()
        shared.pending.reserveCapacity(configuration.groupCommitBytes * 2)
        let committerEncoder = encoders.removeLast()
        // Two jobs per compressor (one being compressed, one waiting for or inside a commit), and
        // one per sync in flight.
        let syncJobs = configuration.durability == .fsync ? configuration.syncsInFlight : 0
        shared.freeJobs = (0..<2 * encoders.count + syncJobs).map { _ in
            let job = FrameJob()
            job.ndjson.reserveCapacity(configuration.groupCommitBytes * 2)  // swapped in as the queue buffer
            return job
        }
        shared.runningCompressors = encoders.count
        syncThreads = configuration.syncThreads
        shared.runningSyncers = syncThreads
        monitor = Monitor(shared, conditions: Condition.firstDone + Condition.doneSlots)
        for index in 0..<syncThreads {
            Thread.startNamed("eventlog-sync\(index)") { [self] in self.runSyncer(index) }
        }
        for (index, encoder) in encoders.enumerated() {
            Thread.startNamed("eventlog-zip\(index)") { [self] in self.runCompressor(encoder) }
        }
        Thread.startNamed("eventlog-writer") { [self] in self.runCommitter(committerEncoder) }
    }

    /// Appends records (each one envelope line without the newline) as part of one group commit and
    /// returns once they are durable under the configured durability mode. Thread-safe; blocks.
    /// The records of one call land in one frame, in order, all or none.
    /// - Throws: `.diskFull` or `.unavailable` (answer 503 and retry later), `.io` on a failed write,
    ///   `.tooLarge` when the records exceed `maxFrameBytes`, `.invalidRecord` for a newline in a record.
    package func append(_ records: [[UInt8]]) throws(LogError) {
        guard !records.isEmpty else { return }
        let start = MonotonicInstant.now
        // Records are reached through the outer buffer's addressor, so neither loop retains and
        // releases every record array (that was ~1/4 of an appending thread's CPU).
        let (total, hasNewline) = records.withUnsafeBufferPointer { outer in
            var total = 0
            for index in outer.indices {
                let found = outer[index].withUnsafeBytes { raw in
                    raw.baseAddress.map { memchr($0, 10, raw.count) != nil } ?? false
                }
                if found { return (0, true) }
                total += outer[index].count + 1
            }
            return (total, false)
        }
        if hasNewline { throw .invalidRecord(reason: "record contains a newline") }
        try enqueue(bytes: total, records: records.count) { pending in
            records.withUnsafeBufferPointer { outer in
                for index in outer.indices {
                    outer[index].withUnsafeBufferPointer { pending.append(contentsOf: $0) }  // (contentsOf: is __owned)
                    pending.append(10)
                }
            }
        }
        metrics.appendSeconds.observe(since: start)
    }

    /// Appends ready-made NDJSON (every record followed by "\n", so the buffer ends with "\n") as
    /// part of one group commit; the faster form of `append(_:)` for callers that encode their
    /// records straight into one buffer (no array per record; one copy into the queue).
    /// Same guarantees and errors as `append(_:)`; the record count is the number of newlines.
    /// - Throws: as `append(_:)`; `.invalidRecord` when the buffer does not end with a newline.
    package func append(ndjson: UnsafeRawBufferPointer) throws(LogError) {
        guard let base = ndjson.baseAddress, ndjson.count > 0 else { return }
        guard ndjson[ndjson.count - 1] == 10 else { throw .invalidRecord(reason: "NDJSON must end with a newline") }
        let start = MonotonicInstant.now
        let records = Self.countLines(base, ndjson.count)
        // Typed as UInt8 so `append(contentsOf:)` takes its contiguous (memcpy) path.
        let bytes = ndjson.assumingMemoryBound(to: UInt8.self)
        try enqueue(bytes: ndjson.count, records: records) { $0.append(contentsOf: bytes) }
        metrics.appendSeconds.observe(since: start)
    }

    /// `append(ndjson:)` without waiting: queues the records and returns; `completion` runs once
    /// the frame holding them is durable (nil) or has failed (the error), on the writer's committer
    /// thread, outside the writer's lock, in commit order. Nothing else waits on a thread meanwhile,
    /// so a caller that answers from `completion` (ingest resuming a suspended connection) saves
    /// the hand-offs to and from a thread blocked in `append`. Same guarantees and errors as
    /// `append(ndjson:)`; an error found before the records are queued (invalid NDJSON, too large,
    /// closed, a recent failure, a full queue after `enqueueTimeout`: this call blocks for queue
    /// space like `append`) runs `completion` at once on the calling thread. `completion` must be
    /// short and must not append to this writer synchronously (the committer would wait on itself).
    ///
    /// `records`: the number of lines when the caller knows it (ingest's normaliser counts the lines
    /// it writes), which saves a scan of every byte for newlines (`memchr`, ~3.5 % of the writer's
    /// CPU at capacity); checked against the buffer in debug builds. Nil: counted here.
    package func append(
        ndjson: UnsafeRawBufferPointer, records known: Int? = nil, completion: @escaping @Sendable (LogError?) -> Void
    ) {
        guard let base = ndjson.baseAddress, ndjson.count > 0 else { return completion(nil) }
        guard ndjson[ndjson.count - 1] == 10 else {
            return completion(.invalidRecord(reason: "NDJSON must end with a newline"))
        }
        let callback = AppendCallback(start: .now, completion: completion)
        assert(known == nil || known == Self.countLines(base, ndjson.count), "records must be the number of lines")
        let records = known ?? Self.countLines(base, ndjson.count)
        let bytes = ndjson.assumingMemoryBound(to: UInt8.self)
        do {
            try enqueue(bytes: ndjson.count, records: records, callback: callback) { $0.append(contentsOf: bytes) }
        } catch {
            completion(error)
        }
    }

    /// Number of newlines in `count` bytes at `base`.
    private static func countLines(_ base: UnsafeRawPointer, _ count: Int) -> Int {
        var records = 0
        var at = 0
        while at < count, let hit = memchr(base + at, 10, count - at) {
            records += 1
            at = base.distance(to: UnsafeRawPointer(hit)) + 1
        }
        return records
    }

    /// `append(ndjson:)` for an array.
    /// - Throws: as `append(ndjson:)`.
    package func append(ndjson: [UInt8]) throws(LogError) {
        try ndjson.withUnsafeBytes { raw in Result { () throws(LogError) in try append(ndjson: raw) } }.get()
    }

    /// Copies a batch of `records` (`bytes` long) into the pending queue with `copy` and waits
    /// until the frame holding it is committed; with a `callback`, returns once queued instead
    /// (the committer runs the callback).
    private func enqueue(
        bytes total: Int, records: Int, callback: AppendCallback? = nil, copy: (inout [UInt8]) -> Void
    ) throws(LogError) {
        if total > pendingLimit { throw .tooLarge(bytes: total, limit: pendingLimit) }
        try monitor.withLock { (shared) throws(LogError) in
            let now = Monitor<Shared>.monotonicNow()
            if shared.isClosing { throw .unavailable(reason: "event log closed") }
            if let until = shared.failedUntil, now < until, let error = shared.lastError { throw error }
            let deadline = now + enqueueTimeoutNanos
            while shared.pending.count + shared.closedBytes + total > pendingLimit {
                if Monitor<Shared>.monotonicNow() >= deadline { throw .unavailable(reason: "event log queue full") }
                monitor.wait(Condition.space, deadline: deadline)
                if shared.isClosing { throw .unavailable(reason: "event log closed") }
            }
            let before = shared.pending.count
            copy(&shared.pending)
            shared.pendingRecords += records
            shared.pendingAppends += 1
            if shared.pendingSince == nil {
                shared.pendingSince = now
                // The committer compresses and commits the batch itself when it is free to.
                if committerCanTake(shared) { monitor.signal(Condition.ready) }
            } else if configuration.groupCommitDelayIsAdaptive, shared.pendingAppends == shared.lastBatchAppends,
                committerCanTake(shared)
            {
                // The committer may be waiting out the delay for this company: it has come.
                monitor.signal(Condition.ready)
            }
            let threshold = batchThreshold(shared)
            if before < threshold, shared.pending.count >= threshold { monitor.signal(Condition.work) }
            let batch = shared.batch
            if let callback { batch.callbacks.append(callback) }
            if shared.pending.count >= maxBatchBytes { closeBatch(shared) }
            if callback != nil { return }
            while !batch.isDone { monitor.wait(Condition.firstDone + batch.slot) }
            if let error = batch.error { throw error }
        }
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

    /// The `fdatasync` calls that covered frames so far (in any writer of this log and node: the
    /// histogram is the registry's), and the seconds they took in all.
    package var syncs: (count: Int, seconds: Double) { (metrics.fsyncSeconds.count, metrics.fsyncSeconds.sum) }

    /// Commits what is pending, stops the pipeline threads and closes the segment. Later appends
    /// fail with `.unavailable`. Safe to call more than once.
    package func close() {
        monitor.withLock { shared in
            shared.isClosing = true
            monitor.broadcast(Condition.work)
            monitor.broadcast(Condition.space)
            monitor.broadcast(Condition.ready)
            while !shared.hasExited { monitor.wait(Condition.exited) }
        }
    }

    deinit { close() }
}
