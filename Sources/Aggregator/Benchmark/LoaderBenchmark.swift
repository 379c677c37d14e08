import EventLog
import EventModel
import Foundation
import Postgres

/// The loader benchmark (issue 5): N realistic envelopes written to compressed segments, loaded by
/// the aggregator to committed rows, against a baseline of the same events as CSV loaded with
/// `psql \copy` into one table with the same indexes, in the same run on the same server.
///
/// Baseline table: one row per envelope with the raw tables' columns (events' plus the click and
/// match members), a unique index on (app_id, event_id) and the events table's index
/// (app_id, device_id, event_time). The load writes the same envelopes into `events`, `clicks`,
/// `matches` (partitioned), their dedup tables, `devices`, `links`, the rollup and the checkpoint.
/// Both sides start from data on disk and end with committed rows.
package enum LoaderBenchmark {
    /// The figures of one run.
    package struct Result: Sendable, CustomStringConvertible {
        /// Envelopes written and loaded.
        package var events: Int
        /// Compressed segment bytes.
        package var segmentBytes: Int64
        /// Seconds of the load cycles, from the first cycle to the last commit (rollup passes excluded).
        package var loadSeconds: Double
        /// Load cycles used.
        package var cycles: Int
        /// Seconds of the `psql \copy` baseline.
        package var copySeconds: Double
        /// Seconds of the rollup passes (`process_rollups()`, after the cycles, outside the load
        /// transactions) until every queued rollup was applied.
        package var rollupSeconds: Double = 0

        /// Loaded rows per second.
        package var loadRowsPerSecond: Double { Double(events) / loadSeconds }
        /// Baseline rows per second.
        package var copyRowsPerSecond: Double { Double(events) / copySeconds }
        /// Load throughput over baseline throughput (target >= 0.8).
        package var ratio: Double { loadRowsPerSecond / copyRowsPerSecond }

        package var description: String {
            String(
                format:
                    "loader: %d envelopes (%.1f MiB compressed) in %.2f s over %d cycles = %.0f rows/s; "
                    + "psql \\copy CSV baseline: %.2f s = %.0f rows/s; ratio %.2f (target >= 0.80); "
                    + "then rollup passes %.2f s (load + rollups: ratio %.2f)",
                events, Double(segmentBytes) / 1_048_576, loadSeconds, cycles, loadRowsPerSecond, copySeconds,
                copyRowsPerSecond, ratio, rollupSeconds, copySeconds / (loadSeconds + rollupSeconds))
        }
    }

    /// Runs the benchmark in two fresh schemas of `databaseURL` (dropped afterwards).
    /// - Parameters:
    ///   - events: envelopes to generate (default 200,000).
    ///   - databaseURL: a `postgresql://` URL of a database the caller may create schemas in.
    ///   - sqlDirectory: the migrations (`sql/`), applied to the load schema.
    ///   - psql: the `psql` binary for the baseline.
    ///   - workDirectory: where segments and the CSV go (a temporary directory by default; removed).
    ///   - maxEventsPerCycle: the loader's batch bound (default: the configuration's default).
    ///   - copyFirst: run the `psql \copy` baseline before the load instead of after it.
    ///   - progress: receives one line per phase.
    /// - Throws: any error of the log, the database or `psql`.
    package static func run(
        events: Int = 200_000, databaseURL: String, sqlDirectory: String, psql: String = "psql",
        workDirectory: String? = nil, maxEventsPerCycle: Int? = nil, copyFirst: Bool = false,
        progress: (String) -> Void = { print($0) }
    ) throws -> Result {
        let suffix = String(UInt64.random(in: 0..<UInt64.max), radix: 16)
        let work = (workDirectory ?? NSTemporaryDirectory()) + "/loader-bench-" + suffix
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let loadSchema = "bench_load_" + suffix
        let copySchema = "bench_copy_" + suffix
        let admin = try Connection(url: databaseURL)
        defer {
            _ = try? admin.execute("drop schema if exists \(identifier: loadSchema) cascade")
            _ = try? admin.execute("drop schema if exists \(identifier: copySchema) cascade")
            admin.close()
        }
        try admin.execute("create schema \(identifier: loadSchema)")
        try admin.execute("create schema \(identifier: copySchema)")
        let loadURL = Connection.withSearchPath(databaseURL, schema: loadSchema)

        // Schema and partitions first: neither side pays for DDL inside the timing.
        let setup = try Connection(url: loadURL)
        try Migrator(directory: sqlDirectory).migrate(setup)
        let today = StagingBatch.day(of: .now())
        _ = try setup.query(
            LoadSQL.ensurePartitions(from: PartitionCache.iso(today - 3), to: PartitionCache.iso(today + 3)))
        try setup.unsafeSQL(baselineTable(schema: SQL.quoteIdentifier(copySchema)))
        setup.close()

        progress("bench: writing \(events) envelopes to segments and CSV")
        let csvPath = work + "/events.csv"
        let segmentBytes = try writeInputs(events: events, dataDirectory: work, csvPath: csvPath)

        // Each side runs after the other in turn (`copyFirst`), so whatever the first leaves the
        // server doing (writing back its pages, autovacuum of what it loaded) does not always
        // land on the same side; bench/run alternates the order over its runs.
        let copySeconds: Double
        let loaded: Loaded
        func load() throws -> Loaded {
            try loadWithAggregator(
                url: loadURL, dataDirectory: work, maxEventsPerCycle: maxEventsPerCycle, events: events,
                progress: progress)
        }
        func copy() throws -> Double {
            try copyWithPSQL(
                psql, url: databaseURL, schema: copySchema, csvPath: csvPath, events: events, progress: progress)
        }
        if copyFirst {
            copySeconds = try copy()
            loaded = try load()
        } else {
            loaded = try load()
            copySeconds = try copy()
        }
        return Result(
            events: events, segmentBytes: segmentBytes, loadSeconds: loaded.loadSeconds, cycles: loaded.cycles,
            copySeconds: copySeconds, rollupSeconds: loaded.rollupSeconds)
    }

    /// What the aggregator's side took: its load cycles, its rollup passes, and how many cycles.
    typealias Loaded = (loadSeconds: Double, rollupSeconds: Double, cycles: Int)

    /// The aggregator's side: cycles until caught up into the schema of `url`, then the rollups.
    private static func loadWithAggregator(
        url loadURL: String, dataDirectory work: String, maxEventsPerCycle: Int?, events: Int,
        progress: (String) -> Void
    ) throws -> Loaded {
        progress("bench: loading with the aggregator")
        var configuration = AggregatorConfiguration(databaseURL: loadURL, dataDirectory: work)
        configuration.retainLoadedSegmentsFor = nil
        if let maxEventsPerCycle { configuration.maxEventsPerCycle = maxEventsPerCycle }
        let aggregator = try Aggregator(configuration: configuration, registry: .init())
        // Cycles until caught up (what `runUntilCaughtUp` does), timed apart from the rollup passes:
        // the load figure is "to committed rows", the rollup figure "until the reports are current".
        var summaries: [CycleSummary] = []
        let loadStart = ContinuousClock.now
        for _ in 0..<100_000 {
            let summary = try aggregator.runOnce()
            summaries.append(summary)
            if !summary.backlog || !summary.ran { break }
        }
        let cyclesEnd = ContinuousClock.now
        try aggregator.processRollups()
        let rollupsEnd = ContinuousClock.now
        let passSeconds = summaries.reduce(0.0) { $0 + ($1.rollupDuration?.seconds ?? 0) }
        aggregator.stop()
        let rows = summaries.reduce(0) { $0 + $1.rows }
        progress("bench: load phases " + CycleSummary.phaseTotals(summaries, decimals: 2))
        guard rows == events else {
            throw AggregatorError.database("benchmark loaded \(rows) rows, expected \(events)")
        }
        return (
            (cyclesEnd - loadStart).seconds - passSeconds, passSeconds + (rollupsEnd - cyclesEnd).seconds,
            summaries.count
        )
    }

    /// The baseline's side: `psql \copy` of the CSV into the baseline table of `copySchema`; its seconds.
    private static func copyWithPSQL(
        _ psql: String, url databaseURL: String, schema copySchema: String, csvPath: String,
        events: Int, progress: (String) -> Void
    ) throws -> Double {
        progress("bench: psql \\copy baseline")
        let copyStart = ContinuousClock.now
        try runPSQL(
            psql, url: databaseURL,
            command: "\\copy \(SQL.quoteIdentifier(copySchema)).bench_rows FROM '\(csvPath)' WITH (FORMAT csv)")
        let copySeconds = (ContinuousClock.now - copyStart).seconds
        let check = try Connection(url: databaseURL)
        defer { check.close() }
        let copied = try check.query("select count(*) as n from \(identifier: copySchema).bench_rows").first?[
            "n", as: Int.self]
        guard copied == events else { throw AggregatorError.database("baseline copied \(copied ?? -1) rows") }
        return copySeconds
    }

    /// The baseline table: the raw tables' columns, the same indexes plus the unique key.
    static func baselineTable(schema: String) -> String {
        """
        CREATE TABLE \(schema).bench_rows (
            kind text NOT NULL, app_id text NOT NULL, event_id text NOT NULL, event_time timestamptz NOT NULL,
            received_at timestamptz NOT NULL, clock text NOT NULL, name text, device_id text, platform text, sdk text,
            client_ts timestamptz, sent_at timestamptz, install_click_id text, open_click_id text, open_type text,
            click_id text, data jsonb, metadata jsonb, url text, path text, query jsonb, utm_source text,
            utm_medium text, utm_campaign text, click_kind text, user_agent text, ip text, referrer text, method text,
            score integer);
        CREATE UNIQUE INDEX ON \(schema).bench_rows (app_id, event_id);
        CREATE INDEX ON \(schema).bench_rows (app_id, device_id, event_time);
        """
    }

    /// Writes the envelopes to a zstd log (like ingest: group commits of ~1000) and to the CSV.
    private static func writeInputs(events: Int, dataDirectory: String, csvPath: String) throws -> Int64 {
        var logConfiguration = LogConfiguration(directory: dataDirectory + "/segments", node: "node-1")
        logConfiguration.durability = .interval(.milliseconds(50))
        let writer = try LogWriter(configuration: logConfiguration)
        guard FileManager.default.createFile(atPath: csvPath, contents: nil),
            let csv = FileHandle(forWritingAtPath: csvPath)
        else {
            throw AggregatorError.log(node: "bench", reason: "cannot write \(csvPath)")
        }
        var generator = BenchmarkWorld(seed: 42)
        var csvBuffer: [UInt8] = []
        var written = 0
        while written < events {
            let count = min(1000, events - written)
            var lines: [[UInt8]] = []
            lines.reserveCapacity(count)
            for index in written..<written + count {
                let envelope = generator.envelope(index)
                lines.append(envelope.encoded())
                StagingEncoder.appendCSV(envelope, to: &csvBuffer)
            }
            try writer.append(lines)
            csv.write(Data(csvBuffer))
            csvBuffer.removeAll(keepingCapacity: true)
            written += count
        }
        writer.close()
        try csv.close()
        return (try? LogReader(directory: dataDirectory + "/segments", node: "node-1").bytesBehind(nil)) ?? 0
    }

    private static func runPSQL(_ psql: String, url: String, command: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: psql.hasPrefix("/") ? psql : "/usr/bin/env")
        process.arguments =
            (psql.hasPrefix("/") ? [] : [psql]) + ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", command]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw AggregatorError.database("psql exited with status \(process.terminationStatus)")
        }
    }
}

/// A small deterministic world: 20,000 devices of one app, 500 links, the last two days; 80 %
/// actions with a data payload (a third with attribution), 12 % app opens, 6 % clicks, 2 % matches.
/// Event ids are hashed ids as ingest makes them (`EventHash`: the client time, then the digest).
package struct BenchmarkWorld {
    /// How event times are drawn.
    package enum Times: Sendable {
        /// Uniformly over the two days before the world was made (a backlog, a replay).
        case spread
        /// As a live load cycle sees them: 95 % sent within the last minute before the envelope is
        /// made, 5 % (offline queues, late deliveries) up to two days earlier.
        case live
    }

    private var random: SplitMix64
    private let now = Timestamp.now()
    private let times: Times

    init(seed: UInt64, times: Times = .spread) {
        random = SplitMix64(seed: seed)
        self.times = times
    }

    private mutating func nextTime() -> Timestamp {
        switch times {
        case .spread:
            return Timestamp(microseconds: now.microseconds - Int64(next() % 172_800_000_000))
        case .live:
            let window: UInt64 = next() % 100 < 95 ? 60_000_000 : 172_800_000_000
            return Timestamp(microseconds: Timestamp.now().microseconds - Int64(next() % window))
        }
    }

    private mutating func next() -> UInt64 { random.next() }

    private static let names = ["view_item", "add_to_cart", "purchase", "search", "share", "sign_up", "login"]

    mutating func envelope(_ index: Int) -> Envelope {
        let roll = next() % 100
        let time = nextTime()
        let id = EventHash.eventID((next(), next()), clientTime: time)
        let device = "3f2b8c1e-9a4d-4e2b-8f1a-\(String(format: "%012d", Int(next() % 20_000)))"
        let click = "clk_\(next() % 50_000)"
        switch roll {
        case 0..<80:
            var envelope = Envelope(id: id, app: "app_bench", kind: .event, time: time, receivedAt: time)
            envelope.name = Self.names[Int(next() % UInt64(Self.names.count))]
            envelope.device = device
            envelope.platform = next() % 2 == 0 ? .ios : .android
            envelope.sdk = "ios/1.0.2"
            envelope.clientTimestamp = time
            envelope.data = Array(
                #"{"revenue":\#(next() % 10_000)\#(".99"),"currency":"USD","sku":"sku-\#(next() % 1000)","items":[1,2,3]}"#
                    .utf8)
            if next() % 3 == 0 {
                envelope.attribution = Attribution(installClickID: click, openClickID: nil, openType: "deferred")
            }
            return envelope
        case 80..<92:
            var envelope = Envelope(id: id, app: "app_bench", kind: .retention, time: time, receivedAt: time)
            envelope.name = "app_open"
            envelope.device = device
            envelope.platform = .android
            envelope.sdk = "android/2.1.0"
            envelope.clientTimestamp = time
            return envelope
        case 92..<98:
            let clickID = "clk_b\(index)"
            var envelope = Envelope(id: "h:c" + clickID, app: "app_bench", kind: .click, time: time, receivedAt: time)
            envelope.clickID = clickID
            let path = "/articles/\(next() % 500)"
            envelope.url = "https://acme.godetour.link/VnAqasAabE\(path)?utm_source=news&utm_campaign=spring"
            envelope.path = path
            envelope.query = [
                QueryParameter(name: "utm_source", value: "news"),
                QueryParameter(name: "utm_campaign", value: "spring"),
            ]
            envelope.platform = .ios
            envelope.clickKind = .web
            envelope.userAgent = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)"
            envelope.ip = "203.0.113.\(next() % 255)"
            return envelope
        default:
            let clickID = "clk_m\(index)"
            var envelope = Envelope(id: "h:m" + clickID, app: "app_bench", kind: .match, time: time, receivedAt: time)
            envelope.clickID = clickID
            envelope.method = .probabilistic
            envelope.score = Double(850 + next() % 150)
            return envelope
        }
    }
}
