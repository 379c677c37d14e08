import Foundation
import Locking
import Synchronization

/// Client threads that post batches of known events (unique `event_id`s) to whatever port the
/// pipeline listens on now, and remember which ids were acknowledged (2xx, not rejected).
/// Network errors while the pipeline is down are expected: those events are simply unacknowledged.
final class LoadClient: Sendable {
    struct Tally: Sendable {
        /// Every id put in a request body.
        var sent: Set<String> = []
        /// Ids in a 2xx answer's accepted part.
        var acknowledged: Set<String> = []
        /// Answers by status (0: no answer, connection refused or reset).
        var statuses: [Int: Int] = [:]
        /// 503 answers that lacked `Retry-After`.
        var unavailableWithoutRetryAfter = 0
    }

    private let tally = Locked(Tally())
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Int>(0)
    private let clients: Int
    private let prefix: String

    /// Starts `clients` threads posting `batchSize`-event batches to `port()` as `app`, each thread
    /// at most `maxRequests` requests (a bound; `stop()` normally ends them first).
    init(
        clients: Int, app: AppKeys, batchSize: Int = 25, maxRequests: Int = 100_000, prefix: String = "ev",
        port: @escaping @Sendable () -> Int
    ) {
        self.clients = clients
        self.prefix = prefix
        for client in 0..<clients {
            let thread = Thread { [self] in
                run(client: client, app: app, batchSize: batchSize, maxRequests: maxRequests, port: port)
                finished.add(1, ordering: .sequentiallyConsistent)
            }
            thread.start()
        }
    }

    private func run(client: Int, app: AppKeys, batchSize: Int, maxRequests: Int, port: @Sendable () -> Int) {
        let timestamp = ISO8601DateFormatter().string(from: Date())
        for request in 0..<maxRequests {
            if stopping.load(ordering: .sequentiallyConsistent) { return }
            let target = port()
            guard target != 0 else {
                Thread.sleep(forTimeInterval: 0.02)
                continue
            }
            let ids = (0..<batchSize).map { "\(prefix)-\(client)-\(request)-\($0)" }
            let events = ids.map { id in
                #"{"event_id":"\#(id)","event_name":"chaos","timestamp":"\#(timestamp)","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-\#(String(format: "%012d", client))","data":{"n":\#(request)}}"#
            }
            let body = Array(#"{"batch":[\#(events.joined(separator: ","))]}"#.utf8)
            tally.withLock { $0.sent.formUnion(ids) }
            let response = RawHTTP.post(
                port: target, "/api/analytics/batch", key: app.publishable, app: app.id, body: body, timeout: 60)
            let status = response?.status ?? 0
            var accepted: [String] = []
            if let response, (200..<300).contains(status) {
                let rejected = Set(
                    ((response.json?["rejected"] as? [[String: Any]]) ?? []).compactMap { $0["index"] as? Int })
                accepted = ids.enumerated().filter { !rejected.contains($0.offset) }.map(\.element)
            }
            tally.withLock {
                $0.statuses[status, default: 0] += 1
                $0.acknowledged.formUnion(accepted)
                if status == 503 && response?.headers["retry-after"] == nil { $0.unavailableWithoutRetryAfter += 1 }
            }
            if status == 0 || status == 503 { Thread.sleep(forTimeInterval: 0.05) }
        }
    }

    /// Every client thread has ended (sent its `maxRequests`, or stopped).
    var isFinished: Bool { finished.load(ordering: .sequentiallyConsistent) >= clients }

    /// How many ids have been acknowledged so far.
    var acknowledgedCount: Int { tally.withLock { $0.acknowledged.count } }

    /// How many answers had `status` so far.
    func count(of status: Int) -> Int { tally.withLock { $0.statuses[status] ?? 0 } }

    /// Waits until `count(of: status)` grows by `count` (bounded by `timeout`).
    @discardableResult
    func waitForAnswers(_ status: Int, count: Int = 1, timeout: Duration = .seconds(120)) -> Bool {
        let start = self.count(of: status)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if self.count(of: status) >= start + count { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    /// A copy of the figures so far.
    var snapshot: Tally { tally.withLock { $0 } }

    /// Asks the threads to stop and waits (bounded) until they have.
    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        let deadline = ContinuousClock.now + .seconds(120)
        while finished.load(ordering: .sequentiallyConsistent) < clients && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Waits until at least `count` more ids have been acknowledged than now (bounded by `timeout`).
    @discardableResult
    func waitForAcknowledgements(_ count: Int, timeout: Duration = .seconds(120)) -> Bool {
        let start = acknowledgedCount
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if acknowledgedCount >= start + count { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }
}
