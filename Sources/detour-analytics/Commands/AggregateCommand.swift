import Aggregator
import Foundation
import Observability

/// `detour-analytics aggregate`: the aggregator alone, on its timer or once (for cron).
enum AggregateCommand: Command {
    static let name = "aggregate"
    static let summary = "run the aggregator alone (or --once, for cron)"
    static var help: String {
        """
        Usage: detour-analytics aggregate [--once] [options]

        Loads every ingest node's segments under <data-dir>/segments into PostgreSQL after the stored
        checkpoint, exactly once, and refreshes the rollups the new rows touch. Two aggregators against
        one database never load an event twice (the cycle holds a lock on the checkpoint).
        With --once it loads until caught up and exits: 0 when everything was loaded (waiting for the
        load lock while another aggregator, a rollup pass or a rebuild holds it; an app whose time zone
        PostgreSQL does not know has its rollups held back, named on a warning line), 69 when PostgreSQL is unavailable or failing
        (as the report commands), 1 on any other failure (a node's log that cannot be read: the other
        nodes are loaded, and the line names it). Without --once,
        SIGINT/SIGTERM/SIGHUP stop it once the running cycle has committed or rolled back (exit 0; a
        statement it waits for, such as a lock held by a long report rebuild, is cancelled); the same
        signal again stops it at once (exit 128 + the signal; PostgreSQL rolls the cycle back).

          --once                  load the backlog and exit (cron)
        \(databaseHelp)
        \(dataDirectoryHelp)
        \(AggregatorOptions.help)

        Exit status: 0 done or stopped cleanly, 64 bad usage, 69 PostgreSQL unavailable or failing
        (--once), 74 its summary line not written (--once), 1 any other failure, 128 + the signal
        when the same one came again during the shutdown (half a second or more after the first).
        """
    }

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let once = arguments.flag("--once")
        let url = try arguments.databaseURL(environment)
        let data = try arguments.dataDirectory(environment)
        let configuration = try AggregatorOptions.parse(
            &arguments, databaseURL: try requireDatabase(url), dataDirectory: data)
        try arguments.finish()
        warnIfNoEventLog(configuration.segmentsDirectory, once: once)
        // Before start-up, which can wait for PostgreSQL; `--once` (cron) keeps the default action.
        let termination = once ? nil : Termination.watch()
        let aggregator = try Aggregator(
            configuration: configuration,
            retention: AggregatorOptions.retention(segmentsDirectory: configuration.segmentsDirectory))
        guard let termination else { return try loadOnce(aggregator) }
        aggregator.start()
        termination.stopOnSignal { aggregator.stop() }
        return 0
    }

    /// `--once`: loads until caught up, prints the summary line cron users read, and returns 0.
    static func loadOnce(_ aggregator: Aggregator) throws -> Int32 {
        let cycles: [CycleSummary]
        do {
            cycles = try aggregator.runUntilCaughtUp()
        } catch {
            guard case .database = error else { throw error }
            // As the report commands (docs/cron.md): cron wrappers tell "try again later" from a bug.
            return databaseUnavailable("\(error)")
        }
        let events = cycles.reduce(0) { $0 + $1.events }
        let clicks = cycles.reduce(0) { $0 + $1.clicks }
        let matches = cycles.reduce(0) { $0 + $1.matches }
        // The load (segments to committed rows) and the rollup pass separately: cron users see
        // which one a slow run spent its time on (bench/run reads the two figures too).
        let load = cycles.reduce(Duration.zero) { $0 + $1.duration }
        let rollups = cycles.last?.rollupDuration ?? .zero
        say(
            "aggregate: \(cycles.count) cycles, \(events) events, \(clicks) clicks, \(matches) matches loaded"
                + " in \(Self.seconds(load)) s, rollups \(Self.seconds(rollups)) s")
        // Where the load's time went, summed over the cycles (docs/aggregator.md, "The cycle").
        let phases = CycleSummary.phaseTotals(cycles, decimals: 3)
        if !phases.isEmpty { say("aggregate: load phases " + phases) }
        // Damage was only on stderr (the log lines): the summary is what cron mails, as for replay.
        let damaged = cycles.reduce(0) { $0 + $1.damagedFrames }
        if damaged > 0 {
            say(
                "aggregate: warning: \(damaged) damaged frame\(damaged == 1 ? "" : "s") skipped, their records not"
                    + " loaded (log.frame_damaged lines name each file and offset; segments verify)")
        }
        // Records that do not decode (or whose keys PostgreSQL could not index, written before ingest
        // bounded them): they stay in the log and are never loaded. Said on stderr alone until
        // 2026-12-04 (`records.undecodable`, which cron does not mail).
        let undecodable = cycles.reduce(0) { $0 + $1.undecodable }
        if undecodable > 0 {
            say(
                "aggregate: warning: \(undecodable) record\(undecodable == 1 ? "" : "s") could not be decoded and"
                    + " \(undecodable == 1 ? "was" : "were") skipped, not loaded (records.undecodable lines give"
                    + " each cycle's first error)")
        }
        // Apps whose rollups the pass held back (sql/079): their reports stand still until the zone
        // is back, and only the aggregator's log said so.
        for held in cycles.last?.heldRollups ?? [] {
            say(
                "aggregate: warning: rollups of app \(held.app) held back, \(held.days) day\(held.days == 1 ? "" : "s")"
                    + " queued: PostgreSQL does not know its time zone \"\(held.timeZone)\" (install the zone, e.g."
                    + " tzdata-legacy, or `apps update --id \(held.app) --time-zone ZONE`)")
        }
        // A node whose log could not be read: the others were loaded, but this run failed (exit 1,
        // as when one such node failed the whole run, before 2026-12-05).
        let unreadable = cycles.last?.unreadableNodes ?? [:]
        for (node, error) in unreadable.sorted(by: { $0.key < $1.key }) {
            say(
                "aggregate: error: the log of node \(node) could not be read, its records from there are not loaded"
                    + " (the other nodes' are; segments verify names the file): \(error)")
        }
        // Rows whose day a device clock got wrong: loaded, but no day partition is made for them.
        let outside = cycles.reduce(0) { $0 + $1.outsidePartitionWindow }
        if outside > 0 {
            say(
                "aggregate: \(outside) row\(outside == 1 ? "" : "s") dated outside the partition window"
                    + " (in the default partition unless the day already had one)")
        }
        return unreadable.isEmpty ? 0 : 1
    }

    /// A mistyped `--data-dir` loads nothing, quietly, run after run: say so once. Not an error, since
    /// the aggregator may start before ingest has written anything (docker-compose starts both at once).
    static func warnIfNoEventLog(_ segments: String, once: Bool) {
        // Only a log that is not there: one that cannot be reached (EACCES) fails the load, naming
        // the reason, and "no event log" would hide it.
        guard LogSource.presence(of: segments) == .absent else { return }
        Logger(label: "aggregator").warning(
            "segments.missing", ["segments.path": segments, "hint": "is the data directory the one ingest writes?"])
        if once {
            say(
                "aggregate: warning: no event log at \(segments); nothing to load"
                    + " (check --data-dir or DETOUR_DATA_DIR)")
        }
    }

    /// Seconds with three decimals, for the summary line.
    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f", duration / .seconds(1))
    }
}
