import Locking
import Observability

/// Ingest's metric handles, created once per label set and cached by route, so a request costs
/// one lock and one lookup of its route name, not label strings built in the registry (nor a key
/// string and a lookup per metric: that was three locked lookups per request).
final class IngestMetrics: Sendable {
    let registry: MetricsRegistry
    /// By route name, in order of first use: a dozen routes, so a scan that compares lengths first
    /// costs less than hashing the name (two lookups per request).
    private let routes = Locked<[(name: String, handles: RouteHandles)]>([])

    init(registry: MetricsRegistry) { self.registry = registry }

    /// Counts an answered request: by route and status, and for an error answer also by its code
    /// (`code` label; absent on answers without one, such as 200s and the 400 whose every event was
    /// rejected, whose codes are in `ingest_events_rejected_total`).
    func request(route: String, status: Int, code: String?, bytes: Int, started: MonotonicInstant) {
        let (latency, counter, byteCounter) = routes.withLock { (routes) -> (Histogram, Counter, Counter?) in
            let handles = self.handles(route, in: &routes)
            let counter: Counter
            if let found = handles.requests.first(where: { $0.status == status && $0.code == code }) {
                counter = found.counter
            } else {
                var labels = ["route": route, "status": String(status)]
                if let code { labels["code"] = code }
                counter = registry.counter(
                    "ingest_requests_total", help: "HTTP requests answered, by route, status and error code",
                    labels: labels)
                handles.requests.append((status, code, counter))
            }
            guard bytes > 0 else { return (handles.latency, counter, nil) }
            if handles.bytesIn == nil {
                handles.bytesIn = registry.counter(
                    "ingest_bytes_in_total", help: "Request body bytes received on the wire, by route",
                    labels: ["route": route])
            }
            return (handles.latency, counter, handles.bytesIn)
        }
        counter.increment()
        latency.observe(since: started)
        byteCounter?.increment(by: bytes)
    }

    func eventsAccepted(route: String, count: Int) {
        guard count > 0 else { return }
        let counter = routes.withLock { (routes) -> Counter in
            let handles = self.handles(route, in: &routes)
            if let found = handles.accepted { return found }
            let made = registry.counter(
                "ingest_events_accepted_total", help: "Events made durable in the event log, by route",
                labels: ["route": route])
            handles.accepted = made
            return made
        }
        counter.increment(by: count)
    }

    func eventRejected(route: String, code: String, count: Int = 1) {
        let counter = routes.withLock { (routes) -> Counter in
            let handles = self.handles(route, in: &routes)
            if let found = handles.rejected.first(where: { $0.code == code }) { return found.counter }
            let made = registry.counter(
                "ingest_events_rejected_total",
                help:
                    "Events and whole requests refused after their body was read (each dead-lettered), by route and code",
                labels: ["route": route, "code": code])
            handles.rejected.append((code, made))
            return made
        }
        counter.increment(by: count)
    }

    /// Under the lock: `route`'s handles, made on its first use (the latency histogram with them;
    /// the other series when first counted, so a route shows only what it has seen).
    private func handles(
        _ route: String, in routes: inout [(name: String, handles: RouteHandles)]
    ) -> RouteHandles {
        let length = route.utf8.count
        for entry in routes where entry.name.utf8.count == length && entry.name == route { return entry.handles }
        let made = RouteHandles(
            latency: registry.histogram(
                "ingest_request_duration_seconds", help: "Time from request head to answer, by route",
                labels: ["route": route]))
        routes.append((route, made))
        return made
    }
}

/// One route's metric handles. `@unchecked Sendable`: the `var`s change only under
/// `IngestMetrics.routes`' lock; the handles themselves are thread-safe.
private final class RouteHandles: @unchecked Sendable {
    let latency: Histogram
    /// By status and error code, in order of first use (a route answers with a handful of them).
    var requests: [(status: Int, code: String?, counter: Counter)] = []
    var bytesIn: Counter?
    var accepted: Counter?
    /// By rejection code, in order of first use.
    var rejected: [(code: String, counter: Counter)] = []

    init(latency: Histogram) { self.latency = latency }
}
