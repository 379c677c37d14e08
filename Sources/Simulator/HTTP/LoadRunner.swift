import Foundation
import Locking
import Synchronization

/// Sends a request plan with N worker threads, each on its own keep-alive connection.
///
/// Phases run one after another (all of phase 0 is answered before phase 1 starts); within a
/// phase workers take the next request from a shared counter, so order is approximate, as it
/// would be from many real clients. A request is encoded just before it is sent (batch `sent_at`
/// is read from the clock then). 429 and 503 answers are retried after `Retry-After`. Stops
/// taking requests at the deadline.
final class LoadRunner: Sendable {
    let target: TargetAddress
    let encoder: RequestEncoder
    let concurrency: Int
    let bucket: TokenBucket?
    let deadline: ContinuousClock.Instant
    let ioTimeoutSeconds: Int
    let maxRetries: Int

    init(
        target: TargetAddress, encoder: RequestEncoder, concurrency: Int, rate: Double?,
        deadline: ContinuousClock.Instant,
        ioTimeoutSeconds: Int = 30, maxRetries: Int = 5
    ) {
        self.target = target
        self.encoder = encoder
        self.concurrency = max(1, concurrency)
        self.bucket = rate.map { TokenBucket(rate: $0) }
        self.deadline = deadline
        self.ioTimeoutSeconds = ioTimeoutSeconds
        self.maxRetries = maxRetries
    }

    /// Sends every phase and returns the merged summary.
    func run(_ plan: RequestPlan) -> SimulationSummary {
        let began = ContinuousClock.now
        var summary = SimulationSummary()
        for phase in plan.phases where !phase.isEmpty {
            summary.merge(runPhase(phase))
        }
        summary.duration = ContinuousClock.now - began
        return summary
    }

    private func runPhase(_ items: [RequestPlan.Item]) -> SimulationSummary {
        let next = Atomic<Int>(0)
        let results = Locked(SimulationSummary())
        let group = DispatchGroup()
        for _ in 0..<min(concurrency, items.count) {
            group.enter()
            let thread = Thread { [self] in
                let summary = work(items, next)
                results.withLock { $0.merge(summary) }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        return results.withLock { $0 }
    }

    /// One worker: its own connection and summary, requests from the shared counter.
    private func work(_ items: [RequestPlan.Item], _ next: borrowing Atomic<Int>) -> SimulationSummary {
        var worker = Worker(runner: self)
        while true {
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < items.count else { break }
            guard ContinuousClock.now < deadline else {
                worker.summary.notSent += 1
                continue
            }
            worker.send(items[index])
        }
        return worker.summary
    }

    /// Real time now, milliseconds since the epoch (for batch `sent_at`).
    static func wallClockMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}

/// One worker thread's state: its connection and its part of the summary.
private struct Worker {
    let runner: LoadRunner
    var connection: HTTPConnection?
    var summary = SimulationSummary()

    init(runner: LoadRunner) { self.runner = runner }

    mutating func send(_ item: RequestPlan.Item) {
        runner.bucket?.take(item.eventCount)
        var attempt = 0
        while true {
            let request = runner.encoder.encode(item, sendTime: LoadRunner.wallClockMilliseconds())
            let bytes = request.serialized(host: runner.target.hostHeader)
            guard let response = exchange(bytes, path: request.path) else { return }
            if response.status == 429 || response.status == 503, attempt < runner.maxRetries,
                ContinuousClock.now < runner.deadline
            {
                attempt += 1
                summary.retries += 1
                let seconds = response.headers["retry-after"].flatMap { Int($0) } ?? 1
                Thread.sleepPrecisely(.seconds(min(max(seconds, 0), 5)))
                continue
            }
            record(response, request, bytes: bytes.count)
            return
        }
    }

    /// Sends once; a connection closed before any answer is retried once on a new connection
    /// (safe: the pipeline dedups). Nil after a transport error, which is counted.
    private mutating func exchange(_ bytes: [UInt8], path: String) -> HTTPConnection.Response? {
        for attempt in 0..<2 {
            do {
                if connection == nil || connection?.isReusable == false {
                    connection = try HTTPConnection(to: runner.target, timeoutSeconds: runner.ioTimeoutSeconds)
                }
                connection!.limitWaits(until: runner.deadline)
                return try connection!.exchange(bytes)
            } catch {
                connection = nil
                if attempt == 1 || error != .connectionClosed {
                    summary.transportErrors += 1
                    note("\(path): \(error)")
                    return nil
                }
            }
        }
        return nil
    }

    private mutating func record(_ response: HTTPConnection.Response, _ request: SimulatedRequest, bytes: Int) {
        summary.requests += 1
        summary.events += request.eventCount
        summary.bytesSent += bytes
        summary.statuses[response.status, default: 0] += 1
        let isSuccess = (200..<300).contains(response.status)
        if isSuccess != (request.expectation == .accepted) {
            summary.unexpected += 1
            let answer = String(decoding: response.body.prefix(200), as: UTF8.self)
            note("\(request.path) expected \(request.expectation.rawValue), got \(response.status): \(answer)")
        }
    }

    private mutating func note(_ problem: String) {
        if summary.problems.count < 20 { summary.problems.append(problem) }
    }
}

extension RequestPlan.Item {
    /// Events the request carries (for rate limiting).
    var eventCount: Int {
        switch content {
        case .link(let clicks, let matches, _): clicks.count + matches.count
        case .single: 1
        case .batch(_, let events, let invalid, _): events.count + invalid.count
        case .invalidSingle: 1
        case .malformed: 1
        }
    }
}
