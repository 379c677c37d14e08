import Observability

/// The aggregator's series in a `MetricsRegistry` (the process-wide one by default), rendered at
/// `/metrics`. Names and meanings are listed in docs/aggregator.md.
struct AggregatorMetrics: Sendable {
    let cycleSeconds: Histogram
    let cycleRows: Histogram
    let rowsEvents: Counter
    let rowsClicks: Counter
    let rowsMatches: Counter
    let rowsOutsidePartitionWindow: Counter
    let recordsRead: Counter
    let recordsUndecodable: Counter
    let damagedFrames: Counter
    let unreadableNodes: Gauge
    let failures: Counter
    let busyCycles: Counter
    let state: Gauge
    let lagSeconds: Gauge
    let lagEvents: Gauge
    let lagBytes: Gauge
    let newestLoaded: Gauge
    let rollupSeconds: Histogram
    let rollupKeys: Counter
    let rollupFailures: Counter
    let rollupHeldApps: Gauge

    init(registry: MetricsRegistry = .shared) {
        cycleSeconds = registry.histogram(
            "aggregator_cycle_seconds", help: "Duration of load cycles that committed, in seconds.",
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
        cycleRows = registry.histogram(
            "aggregator_cycle_rows", help: "New raw rows committed per load cycle.",
            buckets: [0, 10, 100, 1_000, 5_000, 10_000, 25_000, 50_000, 100_000])
        let rowsHelp = "New rows loaded into the raw tables (duplicates excluded)."
        rowsEvents = registry.counter("aggregator_rows_loaded_total", help: rowsHelp, labels: ["table": "events"])
        rowsClicks = registry.counter("aggregator_rows_loaded_total", help: rowsHelp, labels: ["table": "clicks"])
        rowsMatches = registry.counter("aggregator_rows_loaded_total", help: rowsHelp, labels: ["table": "matches"])
        rowsOutsidePartitionWindow = registry.counter(
            "aggregator_rows_outside_partition_window_total",
            help: "New raw rows dated outside the partition window of their received_at (no partition made for them).")
        recordsRead = registry.counter(
            "aggregator_records_read_total", help: "Log records read by committed cycles (duplicates included).")
        recordsUndecodable = registry.counter(
            "aggregator_records_undecodable_total",
            help: "Log records skipped because they are not valid envelopes or their keys are too long to index.")
        damagedFrames = registry.counter(
            "aggregator_damaged_frames_total", help: "Damaged log frames the reader skipped.")
        unreadableNodes = registry.gauge(
            "aggregator_unreadable_nodes",
            help: "Nodes whose log the last cycle could not read (an I/O error); the other nodes load as usual.")
        failures = registry.counter("aggregator_failures_total", help: "Load cycles that failed and were rolled back.")
        busyCycles = registry.counter(
            "aggregator_busy_cycles_total", help: "Cycles skipped because another aggregator held the load lock.")
        state = registry.gauge(
            "aggregator_state", help: "Aggregator state: 0 active, 1 standby, 2 failing (backing off), 3 stopped.")
        lagSeconds = registry.gauge(
            "aggregator_lag_seconds",
            help: "Newest durable envelope minus newest loaded envelope (received_at), in seconds; 0 when caught up.")
        lagEvents = registry.gauge(
            "aggregator_lag_events",
            help:
                "Envelopes durable in the log but not loaded (estimated from compressed bytes behind); 0 when caught up."
        )
        lagBytes = registry.gauge(
            "aggregator_lag_bytes", help: "Compressed log bytes not yet loaded, over all nodes.")
        newestLoaded = registry.gauge(
            "aggregator_newest_loaded_received_at_seconds",
            help: "received_at of the newest loaded envelope, seconds since the epoch.")
        rollupSeconds = registry.histogram(
            "aggregator_rollup_seconds",
            help: "Duration of rollup passes (process_rollups) that committed, in seconds.",
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
        rollupKeys = registry.counter(
            "aggregator_rollup_keys_total", help: "(app, day) rollup keys recomputed by rollup passes.")
        rollupFailures = registry.counter(
            "aggregator_rollup_failures_total",
            help: "Rollup passes that failed and were rolled back (work stays queued).")
        rollupHeldApps = registry.gauge(
            "aggregator_rollup_held_apps",
            help: "Apps whose queued rollups the last pass held back: PostgreSQL does not know their time zone.")
    }
}
