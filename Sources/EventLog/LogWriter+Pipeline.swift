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
                if shared.pendingSince == nil {
                    if shared.isClosing { return nil }
                    monitor.wait(Condition.work)
                    continue
                }
                // Bigger frames when the queue is deep: each compressed frame waiting for or inside
                // a commit doubles the size a batch waits for. A frame taken later still makes the
                // same sync: the committer is busy with the earlier ones, and large frames cost
                // ~20 % less CPU per record than 256 KiB ones (and compress better).
                if shared.freeJobs.isEmpty || (shared.pending.count < batchThreshold(shared) && !shared.isClosing) {
                    monitor.wait(Condition.work)
                    continue
                }
                return takePending(shared)
            }
        }
    }

    /// Under the lock: moves the pending records into a free job, stamped with the next ticket.
    private func takePending(_ shared: Shared) -> FrameJob {
        let job = shared.freeJobs.removeLast()
        swap(&shared.pending, &job.ndjson)
        job.records = shared.pendingRecords
        job.ticket = shared.nextTicket
        job.batch = shared.batch
        shared.nextTicket += 1
        shared.batchCount += 1
        shared.batch = CommitBatch(slot: shared.batchCount % Condition.doneSlots)
        shared.pendingRecords = 0
        shared.pendingSince = nil
        monitor.broadcast(Condition.space)
        return job
    }

    /// True when no batch is being compressed, waiting for the committer or being committed.
    func isIdle(_ shared: Shared) -> Bool {
        shared.nextTicket == shared.nextCommit && shared.committing == 0
    }

    /// The pending size at which a compressor takes the batch: `groupCommitBytes`, doubled for
    /// each compressed frame waiting for or inside a commit, at most `deepBatchBytes`.
    func batchThreshold(_ shared: Shared) -> Int {
        let inFlight = shared.ready.count + shared.committing
        return min(configuration.groupCommitBytes << min(inFlight, 8), max(configuration.groupCommitBytes, deepBatchBytes))
    }

    /// What the committer does next.
    private enum CommitterWork {
        /// Compressed frames, consecutive in ticket order, to commit.
        case frames([FrameJob])
        /// A due batch taken while nothing else was in flight: compress it here, then commit it.
        case compress(FrameJob)
        /// Nothing to commit: perform an interval sync if due, then look again.
        case idle
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
            case .end: break loop
            }
            var rest = jobs[...]
            while !rest.isEmpty {
                let count = core.commit(rest)
                finish(rest.prefix(count))
                rest = rest.dropFirst(count)
            }
        }
        core.close()
        monitor.withLock { shared in
            shared.hasExited = true
            monitor.broadcast(Condition.exited)
        }
    }

    /// Takes the frame with the next ticket and every consecutive one that is also compressed; or,
    /// when nothing is in flight, a due pending batch (`groupCommitBytes` reached, `groupCommitDelay`
    /// passed, or closing); else waits until one of these or an interval sync is due.
    private func takeCommitterWork() -> CommitterWork {
        let syncIn = core.nanosUntilSync()
        return monitor.withLock { shared in
            var jobs: [FrameJob] = []
            while let index = shared.ready.firstIndex(where: { $0.ticket == shared.nextCommit }) {
                jobs.append(shared.ready.remove(at: index))
                shared.nextCommit += 1
            }
            if !jobs.isEmpty {
                shared.committing = jobs.count
                return .frames(jobs)
            }
            // Compressors put their last frame into `ready` before they end.
            if shared.runningCompressors == 0 { return .end }
            let now = Monitor<Shared>.monotonicNow()
            var deadline = syncIn.map { now + $0 }
            if isIdle(shared), let since = shared.pendingSince, !shared.freeJobs.isEmpty {
                let due = since + commitDelayNanos
                if shared.isClosing || now >= due || shared.pending.count >= configuration.groupCommitBytes {
                    let job = takePending(shared)
                    shared.nextCommit += 1
                    shared.committing = 1
                    return .compress(job)
                }
                deadline = min(deadline ?? due, due)
            }
            if syncIn == 0 { return .idle }
            monitor.wait(Condition.ready, deadline: deadline)
            return .idle
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
                job.recycle()
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
            if shared.pendingSince != nil, shared.isClosing || shared.pending.count >= batchThreshold(shared) {
                monitor.broadcast(Condition.work)
            }
        }
        for (group, error) in callbacks {
            for callback in group {
                metrics.appendSeconds.observe(since: callback.start)
                callback.completion(error)
            }
        }
    }
}
