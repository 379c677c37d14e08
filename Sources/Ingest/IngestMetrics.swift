import Observability
import Synchronization

/// Ingest's metric handles, created once per label set and cached so the hot path does one
/// dictionary lookup instead of building label strings in the registry.
final class IngestMetrics: Sendable {
    let registry: MetricsRegistry
    private let requests = Mutex<[String: Counter]>([:])
    private let latency = Mutex<[String: Histogram]>([:])
    private let bytesIn = Mutex<[String: Counter]>([:])
    private let accepted = Mutex<[String: Counter]>([:])
    private let rejected = Mutex<[String: Counter]>([:])

    init(registry: MetricsRegistry) { self.registry = registry }

    func request(route: String, status: Int, bytes: Int, started: ContinuousClock.Instant) {
        let key = "\(route) \(status)"
        let counter = requests.withLock { cache in
            if let found = cache[key] { return found }
            let made = registry.counter(
                "ingest_requests_total", help: "HTTP requests answered, by route and status",
                labels: ["route": route, "status": String(status)])
            cache[key] = made
            return made
        }
        counter.increment()
        let histogram = latency.withLock { cache in
            if let found = cache[route] { return found }
            let made = registry.histogram(
                "ingest_request_duration_seconds", help: "Time from request head to answer, by route",
                labels: ["route": route])
            cache[route] = made
            return made
        }
        histogram.observe(since: started)
        if bytes > 0 {
            let byteCounter = bytesIn.withLock { cache in
                if let found = cache[route] { return found }
                let made = registry.counter(
                    "ingest_bytes_in_total", help: "Request body bytes received on the wire, by route",
                    labels: ["route": route])
                cache[route] = made
                return made
            }
            byteCounter.increment(by: bytes)
        }
    }

    func eventsAccepted(route: String, count: Int) {
        guard count > 0 else { return }
        let counter = accepted.withLock { cache in
            if let found = cache[route] { return found }
            let made = registry.counter(
                "ingest_events_accepted_total", help: "Events made durable in the event log, by route",
                labels: ["route": route])
            cache[route] = made
            return made
        }
        counter.increment(by: count)
    }

    func eventRejected(route: String, code: String, count: Int = 1) {
        let key = "\(route) \(code)"
        let counter = rejected.withLock { cache in
            if let found = cache[key] { return found }
            let made = registry.counter(
                "ingest_events_rejected_total",
                help: "Events or whole requests refused, by route and code (written to the dead-letter log)",
                labels: ["route": route, "code": code])
            cache[key] = made
            return made
        }
        counter.increment(by: count)
    }
}
