import Foundation
import Locking
import Synchronization

/// One registry of counters, gauges and histograms, rendered as Prometheus text at `/metrics`.
/// Metric handles are cheap to keep and safe to update from any thread.
package final class MetricsRegistry: Sendable {
    /// The process-wide registry that `/metrics` renders, with the process metrics
    /// (`ProcessMetrics`: CPU, memory, file descriptors, the C heap) sampled at each render.
    package static let shared: MetricsRegistry = {
        let registry = MetricsRegistry()
        ProcessMetrics.install(on: registry)
        return registry
    }()

    private struct Family {
        var help: String
        var type: String
        var series: [String: any MetricSeries] = [:]
    }
    private let families = Locked<[String: Family]>([:])
    private let collectors = Locked<[@Sendable () -> Void]>([])
    /// Held while a render samples and reads the series, so two overlapping scrapes cannot publish
    /// an older sample after a newer one (a counter would seem to go backwards).
    private let rendering = Locked(())

    /// Creates an empty registry (tests use their own).
    package init() {}

    /// Returns the counter `name` with `labels`, creating it on first use.
    package func counter(_ name: String, help: String, labels: [String: String] = [:]) -> Counter {
        series(name, help: help, type: "counter", labels: labels) { Counter() }
    }

    /// Returns the gauge `name` with `labels`, creating it on first use.
    package func gauge(_ name: String, help: String, labels: [String: String] = [:]) -> Gauge {
        series(name, help: help, type: "gauge", labels: labels) { Gauge() }
    }

    /// Returns the histogram `name` with `labels` and upper `buckets` (seconds by convention).
    package func histogram(
        _ name: String, help: String, labels: [String: String] = [:],
        buckets: [Double] = Histogram.latencyBuckets
    ) -> Histogram {
        series(name, help: help, type: "histogram", labels: labels) { Histogram(buckets: buckets) }
    }

    /// Returns a gauge `name` rendered as a counter: a total kept elsewhere (the kernel's CPU time)
    /// and copied in by a collector, so it is set rather than incremented.
    package func sampledCounter(_ name: String, help: String, labels: [String: String] = [:]) -> Gauge {
        series(name, help: help, type: "counter", labels: labels) { Gauge() }
    }

    /// Adds `collect`, which `render()` calls first: it sets series whose values are read on demand.
    package func addCollector(_ collect: @escaping @Sendable () -> Void) {
        collectors.withLock { $0.append(collect) }
    }

    /// The whole registry in the Prometheus text exposition format, version 0.0.4.
    package func render() -> String {
        let snapshot = rendering.withLock { _ in
            for collect in collectors.withLock({ $0 }) { collect() }
            return families.withLock { $0 }
        }
        var out = ""
        for name in snapshot.keys.sorted() {
            let family = snapshot[name]!
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.type)\n"
            for labelText in family.series.keys.sorted() {
                family.series[labelText]!.render(name: name, labels: labelText, into: &out)
            }
        }
        return out
    }

    private func series<M: MetricSeries>(
        _ name: String, help: String, type: String, labels: [String: String], make: () -> M
    ) -> M {
        let labelText = labels.keys.sorted().map { "\($0)=\"\(Self.escape(labels[$0]!))\"" }.joined(separator: ",")
        return families.withLock { families in
            var family = families[name] ?? Family(help: help, type: type)
            if let existing = family.series[labelText] as? M { return existing }
            let created = make()
            family.series[labelText] = created
            families[name] = family
            return created
        }
    }

    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// A metric series that can print itself.
package protocol MetricSeries: Sendable {
    func render(name: String, labels: String, into out: inout String)
}

/// A monotonically increasing count.
package final class Counter: MetricSeries {
    private let value = Atomic<Int>(0)
    /// Adds `amount` (default 1).
    package func increment(by amount: Int = 1) { value.wrappingAdd(amount, ordering: .relaxed) }
    /// The current count.
    package var current: Int { value.load(ordering: .relaxed) }
    package func render(name: String, labels: String, into out: inout String) {
        out += "\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(current)\n"
    }
}

/// A value that goes up and down.
package final class Gauge: MetricSeries {
    private let bits = Atomic<UInt64>(0)
    /// Sets the value.
    package func set(_ newValue: Double) { bits.store(newValue.bitPattern, ordering: .relaxed) }
    /// The current value.
    package var current: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }
    package func render(name: String, labels: String, into out: inout String) {
        out += "\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(current)\n"
    }
}

/// Observations counted into cumulative buckets, as Prometheus histograms are.
package final class Histogram: MetricSeries {
    /// Default latency buckets in seconds, from 100 µs to 10 s.
    package static let latencyBuckets: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]
    private struct State {
        var counts: [Int]
        var sum: Double = 0
        var count: Int = 0
    }
    private let buckets: [Double]
    private let state: Locked<State>

    init(buckets: [Double]) {
        self.buckets = buckets.sorted()
        self.state = Locked(State(counts: Array(repeating: 0, count: buckets.count)))
    }

    /// Records one observation.
    package func observe(_ value: Double) {
        let index = buckets.firstIndex(where: { value <= $0 })
        state.withLock { state in
            if let index { state.counts[index] += 1 }
            state.sum += value
            state.count += 1
        }
    }

    /// Records the seconds elapsed since `start`.
    package func observe(since start: MonotonicInstant) {
        observe(start.elapsedSeconds)
    }

    /// The number of observations so far.
    package var count: Int { state.withLock { $0.count } }

    /// The sum of the observations so far.
    package var sum: Double { state.withLock { $0.sum } }

    package func render(name: String, labels: String, into out: inout String) {
        let snapshot = state.withLock { $0 }
        let prefix = labels.isEmpty ? "" : labels + ","
        var cumulative = 0
        for (bound, count) in zip(buckets, snapshot.counts) {
            cumulative += count
            out += "\(name)_bucket{\(prefix)le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(snapshot.count)\n"
        let suffix = labels.isEmpty ? "" : "{\(labels)}"
        out += "\(name)_sum\(suffix) \(snapshot.sum)\n\(name)_count\(suffix) \(snapshot.count)\n"
    }
}
