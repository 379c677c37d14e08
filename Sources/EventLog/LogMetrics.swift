import Observability

/// The log's metrics in `MetricsRegistry.shared`, labelled by log (`segments`, `deadletter`) and node.
struct LogMetrics: Sendable {
    let appendSeconds: Histogram
    let fsyncSeconds: Histogram
    let frames: Counter
    let records: Counter
    let bytesWritten: Counter
    let uncompressedBytes: Counter
    let failures: Counter
    let diskBytes: Gauge

    init(configuration: LogConfiguration, registry: MetricsRegistry = .shared) {
        let log = configuration.directory.split(separator: "/").last.map(String.init) ?? "log"
        let labels = ["log": log, "node": configuration.node]
        appendSeconds = registry.histogram(
            "eventlog_append_seconds", help: "Time from append to durable acknowledgement.", labels: labels)
        fsyncSeconds = registry.histogram(
            "eventlog_fsync_seconds", help: "Duration of fdatasync calls.", labels: labels)
        frames = registry.counter("eventlog_frames_total", help: "Frames written.", labels: labels)
        records = registry.counter("eventlog_records_total", help: "Records written.", labels: labels)
        bytesWritten = registry.counter(
            "eventlog_bytes_written_total", help: "Compressed bytes written to segments.", labels: labels)
        uncompressedBytes = registry.counter(
            "eventlog_uncompressed_bytes_total", help: "NDJSON bytes written before compression.", labels: labels)
        failures = registry.counter(
            "eventlog_commit_failures_total", help: "Group commits that failed (disk full, I/O error).", labels: labels)
        diskBytes = registry.gauge("eventlog_disk_bytes", help: "Bytes used by this node's segments.", labels: labels)
    }
}
