import Observability
import Locking

/// Ingest's metric handles, created once per label set and cached so the hot path does one
/// dictionary lookup instead of building label strings in the registry.
final class IngestMetrics: Sendable {
    let registry: MetricsRegistry
    private let requests = HandleCache<Counter>()
    private let latency = HandleCache<Histogram>()
    private let bytesIn = HandleCache<Counter>()
    private let accepted = HandleCache<Counter>()
    private let rejected = HandleCache<Counter>()

    init(registry: MetricsRegistry) { self.registry = registry }

    func request(route: String, status: Int, bytes: Int, started: ContinuousClock.Instant) {
        let key = "\(route) \(status)"
        let counter = requests.handle(key) {
            registry.counter(
                "ingest_requests_total", help: "HTTP requests answered, by route and status",
                labels: ["route": route, "status": String(status)])
        }
        counter.increment()
        let histogram = latency.handle(route) {
            registry.histogram(
                "ingest_request_duration_seconds", help: "Time from request head to answer, by route",
                labels: ["route": route])
        }
        histogram.observe(since: started)
        if bytes > 0 {
            let byteCounter = bytesIn.handle(route) {
                registry.counter(
                    "ingest_bytes_in_total", help: "Request body bytes received on the wire, by route",
                    labels: ["route": route])
            }
            byteCounter.increment(by: bytes)
        }
    }

    func eventsAccepted(route: String, count: Int) {
        guard count > 0 else { return }
        let counter = accepted.handle(route) {
            registry.counter(
                "ingest_events_accepted_total", help: "Events made durable in the event log, by route",
                labels: ["route": route])
        }
        counter.increment(by: count)
    }

    func eventRejected(route: String, code: String, count: Int = 1) {
        let key = "\(route) \(code)"
        let counter = rejected.handle(key) {
            registry.counter(
                "ingest_events_rejected_total",
                help: "Events or whole requests refused, by route and code (written to the dead-letter log)",
                labels: ["route": route, "code": code])
        }
        counter.increment(by: count)
    }
}

/// Metric handles by label key, each created once through the registry.
private final class HandleCache<Handle: Sendable>: Sendable {
    private let handles = Locked<[String: Handle]>([:])

    /// The handle for `key`, made by `make` on first use.
    func handle(_ key: String, make: () -> Handle) -> Handle {
        handles.withLock { handles in
            if let found = handles[key] { return found }
            let made = make()
            handles[key] = made
            return made
        }
    }
}
