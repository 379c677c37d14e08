import Foundation
import Postgres

extension ReportBenchmark {
    /// One size of `runSeeded`: how long seeding and the rollups took, what one day's refresh costs,
    /// and the report timings.
    package struct SeededRun: Sendable {
        /// What was inserted.
        package var counts: ReportSeed.Counts
        /// Seconds to insert the raw rows.
        package var seedSeconds: Double
        /// Seconds of `rebuild_rollups()` over them.
        package var rebuildSeconds: Double
        /// The day refreshed (the last full day) and its raw rows (events + clicks + matches).
        package var refreshDay: ReportDay
        /// Raw rows of `refreshDay`.
        package var refreshDayRows: Int
        /// Median milliseconds of `rollup_refresh_day(app, refreshDay)` (one (app, day) key).
        package var refreshDayMilliseconds: Double
        /// The report timings (`run`).
        package var timings: [Timing]
    }

    /// For each size (raw rows: events + clicks + matches): a fresh schema in `databaseURL`,
    /// migrated from `sqlDirectory`, seeded by `ReportSeed` (60 days, `links` links), rollups built
    /// by `rebuild_rollups()`, then one (app, day) refresh timed and every report timed by `run` over
    /// the last 30 days; `each` gets the run as soon as it is measured. The schema is dropped afterwards,
    /// unless `keepSchema` (then `progress` names it, for timing it again with `existingSchema`).
    ///
    /// - Throws: `ReportError` (seeding, queries), `PostgresError` (connection, migration).
    ///
    /// With `existingSchema`, nothing is created, seeded or dropped: the refresh and report timings
    /// run on that schema's data as it is (its first app, the 30 days ending at its newest link day;
    /// `sizes` is ignored).
    package static func runSeeded(
        databaseURL: String, sqlDirectory: String, sizes: [Int], links: Int, runs: Int,
        existingSchema: String? = nil, keepSchema: Bool = false, progress: (String) -> Void = { _ in },
        each: (SeededRun) -> Void
    ) throws {
        if let existingSchema {
            let connection = try Connection(url: Connection.withSearchPath(databaseURL, schema: existingSchema))
            defer { connection.close() }
            let counted = try connection.query(
                """
                SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM clicks) AS clicks,
                       (SELECT count(*) FROM matches) AS matches, (SELECT max(day)::text FROM rollup_link_daily) AS last,
                       (SELECT min(id) FROM apps) AS app
                """)[0]
            let counts = ReportSeed.Counts(
                events: try counted["events", as: Int.self], clicks: try counted["clicks", as: Int.self],
                matches: try counted["matches", as: Int.self], devices: 0)
            guard let last = ReportDay(iso8601: try counted["last", as: String.self]) else {
                throw ReportError.database(message: "no rollups in \(existingSchema)")
            }
            let app = try counted["app", as: String.self]
            each(try measure(connection: connection, app: app, day: last, counts: counts, runs: runs))
            return
        }
        let app = "bench_reports"
        let end = ReportDay.todayUTC
        for size in sizes {
            let schema = "bench_reports_" + String(UInt64.random(in: 0..<UInt64.max), radix: 16)
            let admin = try Connection(url: databaseURL)
            defer {
                if keepSchema {
                    progress("reports: kept schema \(schema) (time it again with --schema \(schema))")
                } else {
                    try? admin.unsafeSQL("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
                }
                admin.close()
            }
            try admin.unsafeSQL("CREATE SCHEMA \"\(schema)\"")  // letters, digits and _ only
            let connection = try Connection(url: Connection.withSearchPath(databaseURL, schema: schema))
            defer { connection.close() }
            _ = try Migrator(directory: sqlDirectory).migrate(connection)
            try connection.execute("INSERT INTO apps (id, name) VALUES (\(app), 'Reports benchmark')")

            var clock = ContinuousClock.now
            let counts = try ReportSeed.populate(
                connection: connection, app: app, rows: size, links: links, days: 60, end: end, progress: progress)
            let seedSeconds = seconds(since: clock)
            progress("reports: seeded \(counts.total) rows (\(counts.events) events) in \(Int(seedSeconds)) s")
            clock = ContinuousClock.now
            try ReportService(connection: connection).rebuild()
            let rebuildSeconds = seconds(since: clock)
            progress("reports: rebuild_rollups() in \(Int(rebuildSeconds)) s")
            try connection.unsafeSQL("ANALYZE")

            var run = try measure(
                connection: connection, app: app, day: end.adding(days: -1), counts: counts, runs: runs)
            run.seedSeconds = seedSeconds
            run.rebuildSeconds = rebuildSeconds
            each(run)
        }
    }

    /// Times one `rollup_refresh_day` of `day` (`runs` times) and the reports (`run`) over the 30
    /// days ending at `day`.
    private static func measure(
        connection: Connection, app: String, day: ReportDay, counts: ReportSeed.Counts, runs: Int
    )
        throws -> SeededRun
    {
        let dayRows = try connection.query(
            """
            SELECT (SELECT count(*) FROM events WHERE event_time >= \(day.iso8601)::date::timestamptz
                      AND event_time < (\(day.iso8601)::date + 1)::timestamptz)
                 + (SELECT count(*) FROM clicks WHERE click_time >= \(day.iso8601)::date::timestamptz
                      AND click_time < (\(day.iso8601)::date + 1)::timestamptz)
                 + (SELECT count(*) FROM matches WHERE match_time >= \(day.iso8601)::date::timestamptz
                      AND match_time < (\(day.iso8601)::date + 1)::timestamptz) AS n
            """)[0]["n", as: Int.self]
        var samples: [Double] = []
        for _ in 0..<max(1, runs) {
            let clock = ContinuousClock.now
            _ = try connection.query("SELECT rollup_refresh_day(\(app), \(day.iso8601)::date)")
            samples.append(seconds(since: clock) * 1000)
        }
        samples.sort()
        let timings = try run(connection: connection, app: app, to: day, runs: runs)
        return SeededRun(
            counts: counts, seedSeconds: 0, rebuildSeconds: 0, refreshDay: day, refreshDayRows: dayRows,
            refreshDayMilliseconds: samples[samples.count / 2], timings: timings)
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}

extension ReportBenchmark {
    /// A seeded run as the `RESULT reports ...` fields `bench/bench.py` reads: `events` (raw rows),
    /// `event_rows`, `links`, `worlds` (`sql`), `seed_s`, `rebuild_s`, `refresh_day_ms`,
    /// `refresh_day_rows`, `runs` and `report_<name>_ms` per timing (dots as underscores).
    package static func fields(_ run: SeededRun, links: Int, runs: Int) -> [(String, String)] {
        func format(_ value: Double) -> String { String(format: "%.2f", value) }
        var fields: [(String, String)] = [
            ("events", String(run.counts.total)), ("event_rows", String(run.counts.events)), ("links", String(links)),
            ("worlds", "sql"), ("seed_s", format(run.seedSeconds)), ("load_s", format(run.seedSeconds)),
            ("rebuild_s", format(run.rebuildSeconds)), ("refresh_day", run.refreshDay.iso8601),
            ("refresh_day_rows", String(run.refreshDayRows)), ("refresh_day_ms", format(run.refreshDayMilliseconds)),
            ("runs", String(runs)),
        ]
        for timing in run.timings {
            fields.append(
                (
                    "report_" + timing.name.replacingOccurrences(of: ".", with: "_") + "_ms",
                    format(timing.medianMilliseconds)
                ))
        }
        return fields
    }
}
