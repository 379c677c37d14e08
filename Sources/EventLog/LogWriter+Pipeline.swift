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

    /// Waits until a batch is due (size, delay or closing) and a job is free, and takes the
    /// pending records into the job; nil when closing and nothing is pending.
    /// Appenders signal `work` at the first record and when the queue reaches `batchThreshold`;
    /// `finish` broadcasts it whenever frames leave the pipeline (the threshold drops).
    private func takeBatch() -> FrameJob? {
        monitor.withLock { shared in
            while true {
                guard let since = shared.pendingSince else {
                    if shared.isClosing { return nil }
                    monitor.wait(Condition.work)
                    continue
                }
                if shared.freeJobs.isEmpty {
                    monitor.wait(Condition.work)
                    continue
                }
                // Bigger frames when the queue is deep: each compressed frame waiting for or inside
                // a commit doubles the size a batch waits for, and the delay only counts when the
                // committer has nothing (then nothing else would make progress). A frame taken
                // later still makes the same sync: the committer is busy with the earlier ones, and
                // large frames cost ~20 % less CPU per record than 256 KiB ones (and compress better).
                // Frames still being compressed do not count: with the committer idle, a second
                // batch compressed alongside can join the same sync.
                if shared.pending.count < batchThreshold(shared), !shared.isClosing {
                    if shared.ready.count + shared.committing > 0 {
                        monitor.wait(Condition.work)  // `finish` returns jobs and broadcasts
                        continue
                    }
                    let due = since + commitDelayNanos
                    if Monitor<Shared>.monotonicNow() < due {
                        monitor.wait(Condition.work, deadline: due)
                        continue
                    }
                }
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
        }
    }

    /// The pending size at which a compressor takes the batch: `groupCommitBytes`, doubled for
    /// each compressed frame waiting for or inside a commit, at most `deepBatchBytes`.
    func batchThreshold(_ shared: Shared) -> Int {
        let inFlight = shared.ready.count + shared.committing
        return min(configuration.groupCommitBytes << min(inFlight, 8), max(configuration.groupCommitBytes, deepBatchBytes))
    }

    /// The committer thread: commits ready frames in ticket order until closed and drained.
    func runCommitter() {
        while let jobs = takeReadyFrames() {
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

    /// Waits for the frame with the next ticket and takes it with every consecutive one that is
    /// also compressed; nil when the compressors have ended and every frame is committed. While
    /// idle, performs interval syncs when due.
    private func takeReadyFrames() -> [FrameJob]? {
        while true {
            let syncIn = core.nanosUntilSync()
            let taken: [FrameJob]?? = monitor.withLock { shared in
                var jobs: [FrameJob] = []
                while let index = shared.ready.firstIndex(where: { $0.ticket == shared.nextCommit }) {
                    jobs.append(shared.ready.remove(at: index))
                    shared.nextCommit += 1
                }
                if !jobs.isEmpty {
                    shared.committing = jobs.count
                    return .some(jobs)
                }
                // Compressors put their last frame into `ready` before they end.
                if shared.runningCompressors == 0 { return .some(nil) }
                if syncIn == 0 { return nil }
                monitor.wait(Condition.ready, deadline: syncIn.map { Monitor<Shared>.monotonicNow() + $0 })
                return nil
            }
            switch taken {
            case .some(.some(let jobs)): return jobs
            case .some(.none): return nil
            case .none: core.syncIfDue()
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
            monitor.broadcast(Condition.work)
        }
        for (group, error) in callbacks {
            for callback in group {
                metrics.appendSeconds.observe(since: callback.start)
                callback.completion(error)
            }
        }
    }
}
