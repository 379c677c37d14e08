import Aggregator
import EventLog
import EventModel
import Foundation
import Ingest
import Observability
import Postgres
import Reports
import Simulator

extension BenchCommand {
    /// `--database-url` or `DATABASE_URL`, required.
    static func requireURL(_ arguments: inout Arguments, _ environment: Environment) throws -> String {
        guard let url = try arguments.databaseURL(environment) else {
            throw UsageError(description: "no database: pass --database-url or set DATABASE_URL")
        }
        return url
    }

    /// `bench loader`: the aggregator's `LoaderBenchmark` (segments to committed rows vs `psql \copy`).
    static func runLoader(_ arguments: inout Arguments, environment: Environment) throws {
        let url = try requireURL(&arguments, environment)
        let events = try arguments.integer("--events", default: 200_000, in: 1000...50_000_000)
        let psql = try arguments.option("--psql") ?? "/usr/lib/postgresql/15/bin/psql"
        let work = try arguments.option("--work")
        let copyFirst = arguments.flag("--copy-first")
        try arguments.finish()
        let result = try LoaderBenchmark.run(
            events: events, databaseURL: url, sqlDirectory: MigrateCommand.locateSQLDirectory(), psql: psql,
            workDirectory: work, copyFirst: copyFirst,
            progress: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) })
        report(
            "loader",
            [
                ("events", String(result.events)), ("segment_bytes", String(result.segmentBytes)),
                ("load_s", format(result.loadSeconds)), ("cycles", String(result.cycles)),
                ("rows_per_s", format(result.loadRowsPerSecond)), ("copy_s", format(result.copySeconds)),
                ("copy_rows_per_s", format(result.copyRowsPerSecond)), ("ratio", format(result.ratio)),
                ("order", copyFirst ? "copy_first" : "load_first"),
            ])
    }

    /// `bench reports`: a simulated world of about N events and `--links` links per size, loaded by
    /// the aggregator, then `ReportBenchmark` times every report query and the daily job's queries.
    /// Sizes are cumulative (`--sizes 1000000,10000000` loads 1M, measures, adds 9M, measures).
    /// `--seed sql`: each size generated straight into the raw tables instead (`ReportSeed`, minutes
    /// for 10M) and the rollups rebuilt, see `ReportBenchmark.runSeeded`.
    static func runReports(_ arguments: inout Arguments, environment: Environment) throws {
        let url = try requireURL(&arguments, environment)
        let sizes = try (arguments.option("--sizes") ?? "100000").split(separator: ",").map { text in
            guard let size = Int(text), size >= 1000 else {
                throw UsageError(description: "--sizes: counts >= 1000, comma-separated")
            }
            return size
        }
        let links = try arguments.integer("--links", default: 1000, in: 1...100_000)
        let runs = try arguments.integer("--runs", default: 3, in: 1...100)
        let work = try arguments.option("--work") ?? NSTemporaryDirectory()
        let source = try arguments.option("--seed") ?? "simulator"
        let existing = try arguments.option("--schema")  // with --seed sql: time an existing seeded schema
        let keep = arguments.flag("--keep-schema")  // with --seed sql: leave each seeded schema in place
        try arguments.finish()
        if source == "sql" {  // raw rows generated in SQL (ReportSeed), rollups by rebuild_rollups()
            try ReportBenchmark.runSeeded(
                databaseURL: url, sqlDirectory: MigrateCommand.locateSQLDirectory(), sizes: sizes, links: links,
                runs: runs, existingSchema: existing, keepSchema: keep,
                progress: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) },
                each: { report("reports", ReportBenchmark.fields($0, links: links, runs: runs)) })
            return
        }
        guard source == "simulator" else { throw UsageError(description: "--seed: sql or simulator") }
        try runReportsSimulated(url: url, sizes: sizes, links: links, runs: runs, work: work)
    }

    /// `bench reports` with the simulator's worlds: each size's events written to a log in `work`,
    /// loaded by the aggregator into a schema of their own (dropped afterwards) and timed; one
    /// result line per size.
    private static func runReportsSimulated(url: String, sizes: [Int], links: Int, runs: Int, work: String) throws {
        let suffix = String(UInt64.random(in: 0..<UInt64.max), radix: 16)
        let schema = "bench_reports_" + suffix
        let data = work + "/reports-" + suffix
        let app = "bench_reports"
        let admin = try Connection(url: url)
        defer {
            try? admin.unsafeSQL("drop schema if exists \"\(schema)\" cascade")
            admin.close()
            try? FileManager.default.removeItem(atPath: data)
        }
        try admin.unsafeSQL("create schema \"\(schema)\"")  // schema: letters, digits and _ only
        let schemaURL = Connection.withSearchPath(url, schema: schema)
        let connection = try Connection(url: schemaURL)
        defer { connection.close() }
        _ = try Migrator(directory: MigrateCommand.locateSQLDirectory()).migrate(connection)
        try connection.execute("INSERT INTO apps (id, name) VALUES (\(app), 'Reports benchmark')")

        var log = LogConfiguration(directory: data + "/segments", node: "node-1")
        log.durability = .interval(.milliseconds(200))
        log.groupCommitDelay = .zero
        let writer = try LogWriter(configuration: log)
        defer { writer.close() }
        var written = 0
        var seed: UInt64 = 1
        var perDevice = 18.0  // first guess of events per simulated device; corrected after each world
        for size in sizes {
            let generateStart = ContinuousClock.now
            while written < size {
                written += try writeWorld(
                    app: app, links: links, events: size - written, seed: seed, writer: writer, perDevice: &perDevice)
                seed += 1
            }
            let generateSeconds = durationSeconds(ContinuousClock.now - generateStart)
            var configuration = AggregatorConfiguration(databaseURL: schemaURL, dataDirectory: data)
            configuration.retainLoadedSegmentsFor = nil
            let aggregator = try Aggregator(configuration: configuration, registry: MetricsRegistry())
            let loadStart = ContinuousClock.now
            let cycles = try aggregator.runUntilCaughtUp()
            let loadSeconds = durationSeconds(ContinuousClock.now - loadStart)
            aggregator.stop()
            let loaded = cycles.reduce(0) { $0 + $1.records }
            let timings = try ReportBenchmark.run(connection: connection, app: app, runs: runs)
            var fields: [(String, String)] = [
                ("events", String(written)), ("links", String(links)), ("worlds", String(seed - 1)),
                ("generate_s", format(generateSeconds)), ("load_s", format(loadSeconds)),
                ("loaded_records", String(loaded)), ("runs", String(runs)),
            ]
            for timing in timings {
                let key = timing.name.replacingOccurrences(of: ".", with: "_")
                fields.append(("report_\(key)_ms", format(timing.medianMilliseconds)))
            }
            report("reports", fields)
        }
    }

    /// Writes the envelopes of one simulated world of about `events` events (devices scaled from a
    /// first estimate of events per device) and returns how many were accepted into the log.
    static func writeWorld(
        app: String, links: Int, events: Int, seed: UInt64, writer: LogWriter, perDevice: inout Double
    ) throws -> Int {
        let end = Timestamp.now().microseconds / 1000
        let devices = max(50, Int(Double(events) / perDevice))
        let parameters = WorldParameters(
            appID: app, links: links, devices: devices, days: 30, start: end - 30 * SimulatedTime.day, seed: seed)
        let world = Simulation.world(parameters)
        let requests = Simulation.requests(for: world, appID: app, publishableKey: "pk", secretKey: "sk")
        var accepted = 0
        var records: [[UInt8]] = []
        for request in requests {
            let header = request.headers.first { $0.name.lowercased() == "content-encoding" }?.value
            guard let encoding = try? ContentEncoding(header: header),
                let body = try? Decompressor.decode(request.body, encoding: encoding, limit: 10 << 20)
            else { continue }
            let sdk = request.headers.first { $0.name.lowercased() == "x-sdk" }?.value
            let context = RequestContext(appID: app, sdkHeader: sdk, receivedAt: Timestamp.now())
            let normalized: NormalizedRequest?
            switch request.path {
            case "/api/analytics/event": normalized = try? Normalizer.single(body: body, kind: .event, context: context)
            case "/api/analytics/retention":
                normalized = try? Normalizer.single(body: body, kind: .retention, context: context)
            case "/api/analytics/batch": normalized = try? Normalizer.batch(body: body, context: context)
            case "/api/link/events": normalized = try? Normalizer.linkEvents(body: body, context: context)
            default: normalized = nil
            }
            for envelope in normalized?.accepted ?? [] { records.append(envelope.encoded()) }
            if records.count >= 2000 {
                try writer.append(records)
                accepted += records.count
                records.removeAll(keepingCapacity: true)
            }
        }
        if !records.isEmpty {
            try writer.append(records)
            accepted += records.count
        }
        perDevice = max(1, Double(accepted) / Double(devices))
        FileHandle.standardError.write(
            Data("bench reports: world seed \(seed), \(devices) devices: \(accepted) events\n".utf8))
        return accepted
    }
}
