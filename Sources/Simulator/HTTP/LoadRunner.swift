import Foundation
import Synchronization

/// Sends a request plan with N worker threads, each on its own keep-alive connection.
///
/// Phases run one after another (all of phase 0 is answered before phase 1 starts); within a
/// phase workers take the next request from a shared counter, so order is approximate, as it
/// would be from many real clients. A request is encoded just before it is sent (batch `sent_at`
/// is read from the clock then). Stops taking requests at the deadline.
final class LoadRunner: Sendable {
    let target: TargetAddress
    let encoder: RequestEncoder
    let concurrency: Int
    let bucket: TokenBucket?
    let deadline: ContinuousClock.Instant
    let ioTimeoutSeconds: Int

    init(
        target: TargetAddress, encoder: RequestEncoder, concurrency: Int, rate: Double?, deadline: ContinuousClock.Instant,
        ioTimeoutSeconds: Int = 30
    ) {
        self.target = target
        self.encoder = encoder
        self.concurrency = max(1, concurrency)
        self.bucket = rate.map { TokenBucket(rate: $0) }
        self.deadline = deadline
        self.ioTimeoutSeconds = ioTimeoutSeconds
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
        let results = Mutex(SimulationSummary())
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

    private func work(_ items: [RequestPlan.Item], _ next: borrowing Atomic<Int>) -> SimulationSummary {
        var summary = SimulationSummary()
        var connection: HTTPConnection?
        while true {
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < items.count else { break }
            guard ContinuousClock.now < deadline else {
                summary.notSent += 1
                continue
            }
            let item = items[index]
            bucket?.take(item.eventCount)
            let request = encoder.encode(item, sendTime: Self.wallClockMilliseconds())
            let bytes = request.serialized(host: target.hostHeader)
            var response: HTTPConnection.Response?
            for attempt in 0..<2 where response == nil {
                do {
                    if connection == nil || connection?.isReusable == false {
                        connection = try HTTPConnection(to: target, timeoutSeconds: ioTimeoutSeconds)
                    }
                    response = try connection!.exchange(bytes)
                } catch {
                    connection = nil
                    // Only a connection closed before any answer is retried (the pipeline dedups anyway).
                    if attempt == 1 || error != .connectionClosed {
                        summary.transportErrors += 1
                        note(&summary, "\(request.path): \(error)")
                        break
                    }
                }
            }
            guard let response else { continue }
            summary.requests += 1
            summary.events += request.eventCount
            summary.bytesSent += bytes.count
            summary.statuses[response.status, default: 0] += 1
            let isSuccess = (200..<300).contains(response.status)
            if isSuccess != (request.expectation == .accepted) {
                summary.unexpected += 1
                let answer = String(decoding: response.body.prefix(200), as: UTF8.self)
                note(&summary, "\(request.path) expected \(request.expectation.rawValue), got \(response.status): \(answer)")
            }
        }
        return summary
    }

    private func note(_ summary: inout SimulationSummary, _ problem: String) {
        if summary.problems.count < 20 { summary.problems.append(problem) }
    }

    /// Real time now, milliseconds since the epoch (for batch `sent_at`).
    static func wallClockMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
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
