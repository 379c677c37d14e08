import EventLog
import Foundation
import Locking

/// Runs report requests off the event loops: a bounded queue drained by a few worker threads, each
/// blocking in the provider (SQL) while the libmicrohttpd loops keep serving ingest traffic.
///
/// Limits: at most `workers` reports run at once and at most `depth` more wait (taken and waiting
/// together never exceed `workers + depth`); `enqueue` refuses the next one (the route answers 503 `reports_busy`), so a burst of slow reports cannot pile up
/// suspended connections without bound.
final class ReportQueue: Sendable {
    /// One queued report and what to do with the answer (called exactly once, on any thread).
    struct Job: Sendable {
        var request: ReportRequest
        var completion: @Sendable (ReportAnswer?) -> Void
    }

    private struct State {
        var jobs: [Job] = []
        var isStopped = false
        var running = 0
        /// Jobs a worker has taken and not finished (a body made while it is sent included).
        var active = 0
    }

    private let provider: any ReportProvider
    private let capacity: Int
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts `workers` threads that call `provider`; at most `depth` jobs wait.
    init(provider: any ReportProvider, workers: Int, depth: Int) {
        self.provider = provider
        self.capacity = workers + depth
        for index in 0..<workers {
            Thread.startNamed("report-\(index)") { [self] in run() }
        }
        state.withLock { $0.running = workers }
    }

    /// Queues a job. Returns false, without calling the completion, when the queue is full; after
    /// `stop()` the completion runs at once with nil (the server is shutting down).
    func enqueue(_ job: Job) -> Bool {
        enum Outcome { case queued, full, stopped }
        let outcome = state.withLock { state -> Outcome in
            if state.isStopped { return .stopped }
            if state.jobs.count + state.active >= capacity { return .full }
            state.jobs.append(job)
            return .queued
        }
        switch outcome {
        case .queued: wake.signal()
        case .full: return false
        case .stopped: job.completion(nil)
        }
        return true
    }

    /// Jobs waiting for a worker (not counting running ones).
    var waiting: Int { state.withLock { $0.jobs.count } }

    /// Answers every waiting job with nil, lets each worker finish the report it is running (and
    /// the body it is making, so no connection stays suspended on it), and
    /// waits for the workers to exit. Safe to call more than once.
    func stop() {
        let (waiting, running) = state.withLock { state -> ([Job], Int) in
            guard !state.isStopped else { return ([], 0) }
            state.isStopped = true
            let waiting = state.jobs
            state.jobs = []
            return (waiting, state.running)
        }
        for job in waiting { job.completion(nil) }
        for _ in 0..<running { wake.signal() }
        for _ in 0..<running { stopped.wait() }
    }

    private func run() {
        while true {
            wake.wait()
            let (job, isStopped) = state.withLock { state -> (Job?, Bool) in
                guard !state.jobs.isEmpty else { return (nil, state.isStopped) }
                state.active += 1
                return (state.jobs.removeFirst(), state.isStopped)
            }
            if let job {
                let answer = provider.respond(to: job.request)
                // A body made while it is sent is made here, after the answer is handed over (the
                // connection sends what is ready meanwhile), or before it for HEAD; the worker stays
                // counted as active until it is made.
                var produced: (any HTTPProducedBody)?
                if case .streamed(_, let body, _, _) = answer { produced = body as? any HTTPProducedBody }
                if job.request.isHead { produced?.produce() }
                if produced == nil || job.request.isHead {
                    // Nothing left to make: the worker is free before the answer goes out, so a
                    // client that sends its next request as soon as it has this answer finds it free
                    // (freed after, that request could meet a full queue and a 503 reports_busy).
                    state.withLock { $0.active -= 1 }
                    job.completion(answer)
                } else {
                    job.completion(answer)
                    produced?.produce()
                    state.withLock { $0.active -= 1 }
                }
            }
            if isStopped, job == nil {
                stopped.signal()
                return
            }
        }
    }
}
