import Glibc
import Observability

// The writer's threads: compressors take pending batches and compress them in parallel; the
// committer writes and syncs them in the order they left the queue and wakes their appenders.
extension LogWriter {
    /// A compressor thread: takes a due batch, compresses it, hands it to the committer.
    func runCompressor(_ encoder: FrameEncoder) {
        while let job = takeBatch() {
            encoder.encode(job)
            monitor.withLock { shared in
                shared.ready.append(job)
                if job.ticket == shared.nextCommit { monitor.signal(Condition.ready) }
            }
        }
        monitor.withLock { shared in
            shared.runningCompressors -= 1
            monitor.signal(Condition.ready)
        }
    }

    /// Waits until the pending queue reaches `batchThreshold` (or the writer closes) and a job is
    /// free, and takes the pending records into the job; nil when closing and nothing is pending.
    /// Smaller batches are the committer's: it compresses a due batch itself when nothing else is
    /// in flight (`takeCommitterWork`), which saves two thread hand-offs per frame at low load.
    /// Appenders signal `work` when the queue reaches `batchThreshold`; `finish` broadcasts it when
    /// frames leave the pipeline and the queue is at the (lower) threshold.
    private func takeBatch() -> FrameJob? {
        monitor.withLock { shared in
            while true {
                if !hasPending(shared) {
                    if shared.isClosing { return nil }
                    monitor.wait(Condition.work)
                    continue
                }
                // Bigger frames when the queue is deep: each compressed frame waiting for or inside
                // a commit doubles the size a batch waits for. A frame taken later still makes the
                // same sync: the committer is busy with the earlier ones, and large frames cost
                // ~20 % less CPU per record than 256 KiB ones (and compress better).
                if shared.freeJobs.isEmpty || (!isDue(shared, threshold: batchThreshold(shared)) && !shared.isClosing) {
                    monitor.wait(Condition.work)
                    continue
                }
                return takePending(shared)
            }
        }
    }

    /// Under the lock: moves the oldest waiting batch (a closed one, else the open one) into a free
    /// job, stamped with the next ticket.
    private func takePending(_ shared: Shared) -> FrameJob {
        let job = shared.freeJobs.removeLast()
        if shared.closed.isEmpty {
            swap(&shared.pending, &job.ndjson)
            job.records = shared.pendingRecords
            job.batch = shared.batch
            startBatch(shared)
        } else {
            var closed = shared.closed.removeFirst()
            shared.closedBytes -= closed.ndjson.count
            swap(&closed.ndjson, &job.ndjson)
            // The job's emptied buffer.
            if shared.spareBuffers.count < maxSpareBuffers { shared.spareBuffers.append(closed.ndjson) }
            job.records = closed.records
            job.batch = closed.batch
        }
        job.ticket = shared.nextTicket
        shared.nextTicket += 1
        monitor.broadcast(Condition.space)
        return job
    }

    /// Under the lock: closes the open batch (it reached `maxBatchBytes`); the next appends start a
    /// new one. Its buffer goes with it, and the open batch continues in a spare buffer.
    func closeBatch(_ shared: Shared) {
        guard let since = shared.pendingSince else { return }
        var buffer = shared.spareBuffers.popLast() ?? []
        swap(&buffer, &shared.pending)
        shared.closedBytes += buffer.count
        shared.closed.append(
            ClosedBatch(ndjson: buffer, records: shared.pendingRecords, since: since, batch: shared.batch))
        startBatch(shared)
        monitor.signal(Condition.work)
    }

    /// Spare buffers kept for closing batches: one per compressor covers a steady deep queue.
    var maxSpareBuffers: Int { configuration.compressionThreads }

    /// Under the lock: an empty open batch with a new set of appenders. Its callback list is made
    /// at the size of the batch it follows (up to 1,024): grown from empty it was reallocated and
    /// copied at 1, 2, 4, 8 and 16 callbacks, ~330 instructions per single-event request.
    private func startBatch(_ shared: Shared) {
        let previous = shared.batch.callbacks.count
        shared.batchCount += 1
        shared.batch = CommitBatch(slot: shared.batchCount % Condition.doneSlots)
        if previous > 0 { shared.batch.callbacks.reserveCapacity(min(previous, 1024)) }
        shared.pendingRecords = 0
        shared.lastBatchAppends = shared.pendingAppends
        shared.pendingAppends = 0
        shared.pendingSince = nil
    }

    /// Under the lock: records wait for a compressor (in a closed batch or the open one).
    func hasPending(_ shared: Shared) -> Bool {
        shared.pendingSince != nil || !shared.closed.isEmpty
    }

    /// Under the lock: the batch a compressor would take next is due by its size: a closed batch,
    /// or an open one of at least `threshold` bytes.
    func isDue(_ shared: Shared, threshold: Int) -> Bool {
        !shared.closed.isEmpty || shared.pending.count >= threshold
    }

    /// True when the committer may take a due batch itself: no batch is being compressed or
    /// waiting for it, and (sync threads) a sync thread is free for the group it would write, else
    /// (the committer syncs, or interval durability) nothing is being committed.
    func committerCanTake(_ shared: Shared) -> Bool {
        guard shared.nextTicket == shared.nextCommit else { return false }
        return syncThreads > 0 ? hasFreeSyncer(shared) : shared.committing == 0
    }

    /// Fsync durability: a sync thread could start on a newly written group at once.
    func hasFreeSyncer(_ shared: Shared) -> Bool {
        shared.syncs.count < syncThreads && shared.syncs.first?.error == nil
    }

    /// The pending size at which a compressor takes the batch: `groupCommitBytes`, doubled for
    /// each compressed frame waiting for or inside a commit, at most `deepBatchBytes`.
    func batchThreshold(_ shared: Shared) -> Int {
        let inFlight = shared.ready.count + shared.committing
        return min(
            configuration.groupCommitBytes << min(inFlight, 8), max(configuration.groupCommitBytes, deepBatchBytes))
    }

    /// What the committer does next.
    private enum CommitterWork {
        /// Compressed frames, consecutive in ticket order, to commit.
        case frames([FrameJob])
        /// A due batch taken while nothing else was in flight: compress it here, then commit it.
        case compress(FrameJob)
        /// Nothing to commit: perform an interval sync if due, then look again.
        case idle
        /// A group's sync failed: cut it and every later written group away.
        case syncFailed
        /// The compressors have ended and every frame is committed.
        case end
    }

    /// The committer thread: commits ready frames in ticket order until closed and drained; when
    /// nothing is in flight it compresses a due batch itself (`encoder`: its own context).
    func runCommitter(_ encoder: FrameEncoder) {
        loop: while true {
            let jobs: [FrameJob]
            switch takeCommitterWork() {
            case .frames(let ready): jobs = ready
            case .compress(let job):
                encoder.encode(job)
                jobs = [job]
            case .idle:
                core.syncIfDue()
                continue loop
            case .syncFailed:
                drainSyncs()
                continue loop
            case .end: break loop
            }
            var rest = jobs[...]
            while !rest.isEmpty {
                if syncThreads == 0 {
                    let count = core.commit(rest)
                    finish(rest.prefix(count))
                    rest = rest.dropFirst(count)
                    continue
                }
                let hasSyncs = monitor.withLock { !$0.syncs.isEmpty }
                let (count, group, _) = core.write(rest, mayRotate: !hasSyncs)
                if count == 0 {
                    // The next frame starts a new segment: the old one's syncs finish first.
                    drainSyncs()
                    continue
                }
                core.publishDiskBytes()
                let unwritten = rest.prefix(count).filter { $0.error != nil }
                if !unwritten.isEmpty { finish(unwritten[...]) }
                if let group {
                    monitor.withLock { shared in
                        shared.syncs.append(group)
                        monitor.signal(Condition.sync)
                    }
                }
                rest = rest.dropFirst(count)
            }
        }
        drainSyncs()
        core.close()
        monitor.withLock { shared in
            shared.stopSyncers = true
            monitor.broadcast(Condition.sync)
            while shared.runningSyncers > 0 { monitor.wait(Condition.ready) }
            shared.hasExited = true
            monitor.broadcast(Condition.exited)
        }
    }

    /// Takes the frame with the next ticket and every consecutive one that is also compressed; or,
    /// when the committer is free to (`committerCanTake`), a due pending batch (`groupCommitBytes`
    /// reached, `groupCommitDelay` passed, or closing); else waits until one of these, a failed
    /// sync or an interval sync is due. With sync threads: takes nothing while none is free, so
    /// requests arriving meanwhile gather into the next frame (as they do while the committer
    /// syncs a group itself).
    private func takeCommitterWork() -> CommitterWork {
        let syncIn = core.nanosUntilSync()
        return monitor.withLock { shared in
            if shared.syncs.first?.error != nil { return .syncFailed }
            if syncThreads > 0, !hasFreeSyncer(shared) {
                monitor.wait(Condition.ready)
                return .idle
            }
            var jobs: [FrameJob] = []
            while let index = shared.ready.firstIndex(where: { $0.ticket == shared.nextCommit }) {
                jobs.append(shared.ready.remove(at: index))
                shared.nextCommit += 1
            }
            if !jobs.isEmpty {
                shared.committing += jobs.count
                return .frames(jobs)
            }
            // Compressors put their last frame into `ready` before they end.
            if shared.runningCompressors == 0 { return .end }
            let now = Monitor<Shared>.monotonicNow()
            var deadline = syncIn.map { now + $0 }
            if committerCanTake(shared), let since = shared.closed.first?.since ?? shared.pendingSince,
                !shared.freeJobs.isEmpty
            {
                // With a sync in flight, the next group starts half a sync later (or once the batch
                // reaches the deep-queue size): syncs in flight are staggered, each covering half a
                // sync's worth of requests, instead of a large group and a tiny one right after it.
                // Adaptive: the delay ends once as many appends wait as the batch before held (the
                // clients it answered are back), so a lone appender is never held.
                let gathered =
                    configuration.groupCommitDelayIsAdaptive && shared.pendingAppends >= shared.lastBatchAppends
                var due = since + (gathered ? 0 : commitDelayNanos)
                if let started = shared.lastSyncStart, !shared.syncs.isEmpty {
                    due = max(due, started + shared.syncEstimate / UInt64(max(1, syncThreads)))
                }
                let threshold = shared.syncs.isEmpty ? configuration.groupCommitBytes : batchThreshold(shared)
                if shared.isClosing || now >= due || isDue(shared, threshold: threshold) {
                    let job = takePending(shared)
                    shared.nextCommit += 1
                    shared.committing += 1
                    return .compress(job)
                }
                deadline = min(deadline ?? due, due)
            }
            if syncIn == 0 { return .idle }
            monitor.wait(Condition.ready, deadline: deadline)
            return .idle
        }
    }

    /// Fsync durability, on the committer: waits until every written group is synced and
    /// acknowledged, or, when a sync failed, until no sync runs any more; then cuts the failed
    /// group and every later one away and fails their appends (the log stays gap-free).
    func drainSyncs() {
        guard syncThreads > 0 else { return }
        let failed: [WrittenGroup] = monitor.withLock { shared in
            while let head = shared.syncs.first {
                if head.error != nil, shared.syncsRunning == 0 {
                    let groups = shared.syncs
                    shared.syncs = []
                    return groups
                }
                monitor.wait(Condition.ready)
            }
            return []
        }
        guard let error = failed.first?.error else {
            core.didSyncAll()
            return
        }
        core.failGroups(failed, error: error)
        core.publishDiskBytes()
        finish(failed.flatMap(\.jobs)[...])
    }

    /// A sync thread: takes every written group not yet being synced, covers them with one
    /// `fdatasync`, then acknowledges, in write order, every group at the head that is synced.
    ///
    /// Each sync thread syncs through a descriptor of its own on the segment (the groups in flight
    /// are all in the open one: the committer switches segments only with no sync in flight),
    /// opened with the segment (`WriterCore.syncFDs`, which says why then). Linux reports a failed
    /// write-back once per open file description, to the first sync that checks through it: until
    /// 2026-12-04 every sync thread used the committer's descriptor, so the sync of a later group
    /// could take the error of an earlier one, which was then acknowledged.
    func runSyncer(_ index: Int) {
        while let groups = takeSyncs() {
            let descriptors = groups[0].syncFDs
            let start = MonotonicInstant.now
            // A descriptor that could not be opened fails the groups, as a failed sync would.
            let code =
                index < descriptors.count
                ? configuration.groupSync(descriptors[index])
                : (groups[0].syncOpenError != 0 ? groups[0].syncOpenError : EIO)
            if code == 0 { metrics.fsyncSeconds.observe(since: start) }
            let took = start.elapsedNanoseconds
            let done: [WrittenGroup] = monitor.withLock { shared in
                shared.syncsRunning -= 1
                shared.syncEstimate = (shared.syncEstimate * 7 + took) / 8
                for group in groups {
                    group.isSynced = true
                    if code != 0 { group.error = WriterCore.syncError(code, group) }
                }
                var done: [WrittenGroup] = []
                while let head = shared.syncs.first, head.isSynced, head.error == nil {
                    done.append(shared.syncs.removeFirst())
                }
                monitor.broadcast(Condition.ready)  // the committer: a free syncer, a failure, drained
                return done
            }
            for group in done { core.countCommitted(group) }
            if !done.isEmpty { finish(done.flatMap(\.jobs)[...]) }
        }
        monitor.withLock { shared in
            shared.runningSyncers -= 1
            monitor.broadcast(Condition.ready)
        }
    }

    /// Waits for written groups no sync has taken; nil when the committer has ended.
    private func takeSyncs() -> [WrittenGroup]? {
        monitor.withLock { shared in
            while true {
                let waiting = shared.syncs.filter { !$0.isSyncing }
                if !waiting.isEmpty {
                    for group in waiting { group.isSyncing = true }
                    shared.syncsRunning += 1
                    shared.lastSyncStart = Monitor<Shared>.monotonicNow()
                    return waiting
                }
                if shared.stopSyncers { return nil }
                monitor.wait(Condition.sync)
            }
        }
    }

    /// Wakes the appenders of committed (or failed) frames and returns the jobs to the pool.
    private func finish(_ jobs: ArraySlice<FrameJob>) {
        let failures = jobs.filter { $0.error != nil }.count
        if failures > 0 { metrics.failures.increment(by: failures) }
        // Appends that did not wait are completed after the lock is released.
        var callbacks: [(callbacks: [AppendCallback], error: LogError?)] = []
        monitor.withLock { shared in
            shared.committing -= jobs.count
            var lastError: LogError?
            for job in jobs {
                job.batch.isDone = true
                job.batch.error = job.error
                if !job.batch.callbacks.isEmpty {
                    callbacks.append((job.batch.callbacks, job.error))
                    job.batch.callbacks = []
                }
                if let error = job.error {
                    lastError = error
                } else {
                    shared.frames += 1
                }
                monitor.broadcast(Condition.firstDone + job.batch.slot)
                job.recycle(keep: 2 * maxBatchBytes)
                shared.freeJobs.append(job)
            }
            if let lastError {
                let retry = UInt64(max(0, configuration.retryAfter.microseconds)) * 1000
                shared.failedUntil = Monitor<Shared>.monotonicNow() + retry
                shared.lastError = lastError
            } else {
                shared.failedUntil = nil
                shared.lastError = nil
            }
            // The threshold dropped and jobs are free again: wake the compressors when the queue is
            // now theirs to take. A smaller batch is the committer's, which looks again next.
            if hasPending(shared), shared.isClosing || isDue(shared, threshold: batchThreshold(shared)) {
                monitor.broadcast(Condition.work)
            }
            // The committer may have found no free job for a due batch: it can take it now.
            if hasPending(shared) { monitor.broadcast(Condition.ready) }
        }
        for (group, error) in callbacks {
            for callback in group {
                metrics.appendSeconds.observe(since: callback.start)
                callback.completion(error)
            }
        }
    }
}
