import Dispatch
package import EventLog
import EventModel
import Foundation
package import Observability
import Postgres
import Synchronization

/// Loads the event log into PostgreSQL on a schedule: one serial `DispatchQueue` and one
/// `DispatchSourceTimer`. A cycle runs on the queue; when it ends, the state machine decides the
/// delay before the next one (at once with a backlog, `loadInterval` otherwise, exponential backoff
/// after a failure) and the timer is re-armed, so cycles never overlap. Blocking libpq and file
/// I/O happen on this queue only, never on the cooperative thread pool.
///
/// Usage: `start()` for a long-running process, `stop()` to end (waits for a running cycle);
/// `runOnce()` / `runUntilCaughtUp()` for `aggregate --once`. Do not call `stop()` or `runOnce()`
/// from inside a cycle (they would wait on the queue they run on).
package final class Aggregator: @unchecked Sendable {
    // @unchecked Sendable: every mutable member below (loader, machine, isRunning, lag estimate and
    // positions) is read and written only on `queue`; the timer is created once and only
    // scheduled/cancelled on `queue` too.
    private let configuration: AggregatorConfiguration
    private let queue = DispatchQueue(label: "detour.aggregator")
    private let timer: any DispatchSourceTimer
    private let loader: Loader
    private var machine: LoadStateMachine
    private var isRunning = false
    private var hasStarted = false
    private let metrics: AggregatorMetrics
    private let logger = Logger(label: "aggregator")
    private let retention: RetentionHook?
    private var lastRetention: ContinuousClock.Instant?
    private var recordsPerCompressedByte = 0.0
    private var lastNewestLoaded: Timestamp?
    private var lastPositions: [String: LogPosition] = [:]
    /// The nodes the last cycle could not read, with the error (logged when it first appears or
    /// changes, and when the node reads again, not every cycle).
    private var unreadable: [String: String] = [:]
    /// The apps whose rollups the last pass held back, with their time zone (logged on change).
    private var heldZones: [String: String] = [:]
    /// Rollup work may be queued (true at start: a previous process may have left some).
    private var rollupsPending = true
    /// The last pass held some app's work back (sql/079): passes keep running every
    /// `rollupInterval`, idle or not, so the work is applied within one interval of the zone being
    /// known again, and each pass moves the watermark the reports state (sql/083). Until
    /// 2026-12-05 a pass that held work cleared `rollupsPending`: on a quiet system no pass ran
    /// again, the released app's report stated a watermark over rollups without its held rows, and
    /// every app's `loaded_through` stood still (retention's quiet-night advance stopped).
    private var rollupsHeld = false
    /// When `process_rollups()` last succeeded (nil: never).
    private var lastRollupPass: ContinuousClock.Instant?
    /// Set by `stop()` (from any thread) before it cancels the running statement: a cycle or pass
    /// that fails then was cancelled for the stop, not failing.
    private let stopping = Atomic<Bool>(false)

    /// Deletes loaded segments older than the configured age; given the node, the position loaded
    /// through and the age. Returns the deleted paths (logged).
    package typealias RetentionHook =
        @Sendable (_ node: String, _ loadedThrough: LogPosition, _ olderThan: Duration) throws -> [String]

    /// Creates an aggregator; nothing runs until `start()` or `runOnce()`. Loaded segments older
    /// than `retainLoadedSegmentsFor` are deleted with `LogRetention.deleteLoaded` (nil: kept).
    /// - Parameters:
    ///   - configuration: validated here.
    ///   - registry: where the metrics go (default the process-wide registry).
    /// - Throws: `AggregatorError.invalidConfiguration`.
    package convenience init(configuration: AggregatorConfiguration, registry: MetricsRegistry = .shared)
        throws(AggregatorError)
    {
        let directory = configuration.segmentsDirectory
        try self.init(
            configuration: configuration, registry: registry,
            retention: { node, loadedThrough, age in
                try LogRetention.deleteLoaded(
                    directory: directory, node: node, loadedThrough: loadedThrough, olderThan: age)
            })
    }

    /// Creates an aggregator with a custom retention call (nil disables retention).
    /// - Parameters:
    ///   - configuration: validated here.
    ///   - registry: where the metrics go.
    ///   - retention: called after a successful cycle, at most every `retentionCheckInterval`, per node.
    /// - Throws: `AggregatorError.invalidConfiguration`.
    package convenience init(
        configuration: AggregatorConfiguration, registry: MetricsRegistry = .shared, retention: RetentionHook?
    ) throws(AggregatorError) {
        try self.init(configuration: configuration, registry: registry, retention: retention, hooks: LoaderHooks())
    }

    init(
        configuration: AggregatorConfiguration, registry: MetricsRegistry, retention: RetentionHook?,
        hooks: LoaderHooks
    ) throws(AggregatorError) {
        try configuration.validate()
        self.configuration = configuration
        self.loader = Loader(configuration: configuration, hooks: hooks)
        self.machine = LoadStateMachine(
            interval: configuration.loadInterval, backoffBase: configuration.backoffBase,
            backoffCap: configuration.backoffCap)
        self.metrics = AggregatorMetrics(registry: registry)
        self.retention = retention
        self.timer = DispatchSource.makeTimerSource(queue: queue)
    }

    deinit {
        if !hasStarted { timer.resume() }  // a never-resumed source must not be released suspended
        timer.cancel()
    }

    /// Starts the timer; the first cycle runs at once. Calling it twice has no effect.
    package func start() {
        queue.sync {
            guard !isRunning, machine.state != .stopped else { return }
            isRunning = true
            hasStarted = true
            timer.setEventHandler { [unowned self] in self.tick() }
            timer.schedule(deadline: .now())
            timer.resume()
            logger.info("aggregator.started", ["interval.s": "\(configuration.loadInterval.seconds)"])
        }
    }

    /// Stops scheduling, cancels the statement a running cycle or rollup pass waits for, waits for
    /// it to end (commit or roll back), and closes the connection. Idempotent.
    ///
    /// The cancel (`PQcancel`, sent from a thread of its own, so a server gone from the network
    /// cannot hold the stop on it) ends a wait on a lock (a long `report rebuild`, a migration) or a
    /// slow statement at once; the cycle rolls back, as a forced stop's would, and loses nothing.
    /// Until 2026-12-05 the stop waited for it, minutes behind a rebuild, and `docker stop` killed the
    /// process at its grace period's end. A cycle still connecting is not cancelled (it has no
    /// statement yet): the stop waits for `connect_timeout`, or the same signal again forces it.
    package func stop() {
        if !stopping.exchange(true, ordering: .acquiringAndReleasing),
            let canceller = loader.canceller.withLock({ $0 })
        {
            Thread.detachNewThread { canceller.cancel() }
        }
        queue.sync {
            guard machine.state != .stopped else { return }
            machine.stop()
            metrics.state.set(machine.state.gaugeValue)
            if isRunning { timer.cancel() }
            isRunning = false
            loader.disconnect()
            logger.info("aggregator.stopped")
        }
    }

    /// The current state (active, standby, failing, stopped).
    package var state: LoadStateMachine.State { queue.sync { machine.state } }

    /// Runs one cycle now, on the aggregator's queue, and returns what it did.
    /// - Throws: `AggregatorError` when the cycle failed (it was rolled back; nothing was lost).
    package func runOnce() throws(AggregatorError) -> CycleSummary {
        let result: Result<CycleSummary, AggregatorError> = queue.sync { cycle() }
        return try result.get()
    }

    /// Runs cycles until one ends without backlog (at most `maxCycles`), for `aggregate --once`,
    /// then applies every queued rollup in one pass, so the reports are current when it returns.
    /// The cycles themselves run no rollup pass: a pass recomputes whole (app, day) keys, so one
    /// after the first cycle of a backlog was redone after the last (100,000 events of one day:
    /// 3.9 s with it, about 1 s less without).
    /// - Returns: the summaries of the cycles run; the last one's `rollupDuration` is the final pass.
    /// - Throws: `AggregatorError` when a cycle or the final rollup pass failed.
    ///
    /// Each cycle waits for the load lock: a holder may be another `--once`'s partition step or
    /// rollup pass, or a `report daily`'s pass, none of which loads this backlog. Until 2026-12-05 a
    /// busy lock ended the run with "another aggregator ... is loading", exit 0: two `--once` at
    /// once each found the other's partition step or final pass holding it, and in 4 of 7 paired
    /// runs neither loaded anything (`ExactlyOnceTests.concurrentOnceRunsLoadEverything`).
    package func runUntilCaughtUp(maxCycles: Int = 10_000) throws(AggregatorError) -> [CycleSummary] {
        var summaries: [CycleSummary] = []
        for _ in 0..<max(1, maxCycles) {
            let result: Result<CycleSummary, AggregatorError> = queue.sync {
                cycle(rollups: false, waitForLock: true)
            }
            let summary = try result.get()
            summaries.append(summary)
            if !summary.backlog || !summary.ran { break }
        }
        let passStart = ContinuousClock.now
        summaries[summaries.count - 1].heldRollups = try pass().held
        summaries[summaries.count - 1].rollupDuration = ContinuousClock.now - passStart
        return summaries
    }

    /// Applies every queued rollup now (`process_rollups()` in a transaction of its own), on the
    /// aggregator's queue. Returns the (app, day) keys recomputed. Do not call it from inside a
    /// cycle (it waits on the queue); after `stop()` it does nothing and returns 0.
    /// - Throws: `AggregatorError.database`; the queue is left as it was (the pass rolled back).
    @discardableResult
    package func processRollups() throws(AggregatorError) -> Int {
        try pass().keys
    }

    /// `processRollups()` with what the pass held back.
    private func pass() throws(AggregatorError) -> RollupPass {
        let result: Result<RollupPass, AggregatorError> = queue.sync {
            machine.state == .stopped ? .success(RollupPass(keys: 0, held: [])) : rollupPass()
        }
        return try result.get()
    }

    /// What a rollup pass did: the keys it recomputed and the apps whose work it held back.
    private struct RollupPass {
        var keys: Int
        var held: [HeldRollups]
    }

    /// One rollup pass on the queue; keeps the pending flag and the metrics, and names each app whose
    /// work the passes hold back (`rollups.held` when an app is first held, `rollups.released`
    /// when it no longer is: one line per change, not per pass; sql/079).
    private func rollupPass() -> Result<RollupPass, AggregatorError> {
        dispatchPrecondition(condition: .onQueue(queue))
        do {
            let (keys, held, duration) = try loader.processRollups()
            rollupsPending = false
            rollupsHeld = !held.isEmpty
            lastRollupPass = .now
            metrics.rollupSeconds.observe(duration.seconds)
            metrics.rollupKeys.increment(by: keys)
            metrics.rollupHeldApps.set(Double(held.count))
            if keys > 0 {
                logger.debug("rollups.done", ["keys": "\(keys)", "rollups.ms": "\(Int(duration.seconds * 1000))"])
            }
            let zones = Dictionary(held.map { ($0.app, $0.timeZone) }, uniquingKeysWith: { first, _ in first })
            for app in held where heldZones[app.app] != app.timeZone { app.log(to: logger) }
            for app in heldZones.keys.sorted() where zones[app] == nil {
                logger.notice("rollups.released", ["app": app])
            }
            heldZones = zones
            return .success(RollupPass(keys: keys, held: held))
        } catch {
            if stopping.load(ordering: .acquiring) {
                logger.info("rollups.cancelled", ["reason": "stopping", "error": error.description])
                return .failure(error)
            }
            metrics.rollupFailures.increment()
            logger.warning("rollups.failed", ["error": error.description])
            return .failure(error)
        }
    }

    /// After a committed cycle: process the queue when `rollupInterval` has passed since the last
    /// pass, or at once when the cycle found nothing new (idle). A failure is logged and the work
    /// stays queued for the next pass (the load itself is not affected). Not after every cycle: a
    /// pass recomputes whole (app, day)s, so its cost hardly depends on how few events the cycle
    /// brought, and under steady ingest one pass per `rollupInterval` does the same work once.
    /// Returns the duration of the pass when one ran.
    private func maybeProcessRollups(idle: Bool) -> Duration? {
        guard rollupsPending || rollupsHeld else { return nil }
        let due = lastRollupPass.map { ContinuousClock.now - $0 >= configuration.rollupInterval } ?? true
        // Held work alone waits for the interval: an idle cycle comes every loadInterval.
        guard (idle && rollupsPending) || due else { return nil }
        let start = ContinuousClock.now
        _ = rollupPass()
        return ContinuousClock.now - start
    }

    /// One timer firing: run a cycle, then re-arm the timer as the state machine decides.
    private func tick() {
        guard isRunning else { return }
        _ = cycle()
    }

    /// Runs one cycle on the queue and feeds the outcome to the state machine; with `rollups`, then
    /// a rollup pass when one is due.
    /// `waitForLock`: wait for the load lock held elsewhere instead of counting the cycle `busy`.
    private func cycle(rollups: Bool = true, waitForLock: Bool = false) -> Result<CycleSummary, AggregatorError> {
        dispatchPrecondition(condition: .onQueue(queue))
        let start = ContinuousClock.now
        var result: Result<CycleSummary, AggregatorError>
        let outcome: LoadStateMachine.CycleOutcome
        var idle: Bool?  // set when a cycle committed: did it find nothing new?
        do {
            if let report = try loader.runCycle(waitForLock: waitForLock) {
                let summary = record(report, duration: ContinuousClock.now - start)
                outcome = .loaded(records: report.records, backlog: report.backlog)
                if report.touchedKeys > 0 { rollupsPending = true }
                idle = report.records == 0
                result = .success(summary)
                runRetention(report)
            } else {
                metrics.busyCycles.increment()
                outcome = .busy
                result = .success(.skipped(duration: ContinuousClock.now - start))
            }
        } catch {
            if stopping.load(ordering: .acquiring) {
                // Cancelled by stop() (or failing as it stops): rolled back, nothing lost, and no
                // failure to count or back off from; the aggregator is stopped next.
                logger.info("load.cancelled", ["reason": "stopping", "error": error.description])
                return .failure(error)
            }
            metrics.failures.increment()
            outcome = .failed(reason: error.description)
            result = .failure(error)
            updateLagWhileFailing()
        }
        let decision = machine.cycleFinished(outcome, jitter: Double.random(in: 0..<1))
        if decision.reconnect { loader.disconnect() }
        log(decision.change)
        metrics.state.set(machine.state.gaugeValue)
        if isRunning, machine.state != .stopped {
            timer.schedule(deadline: .now() + decision.delay.seconds)
        }
        // The rollup pass runs after the next cycle is scheduled: a pass shorter than the pause
        // before that cycle delays nothing (the timer fires on this queue once the pass is done).
        if rollups, let idle, case .success(var summary) = result {
            summary.rollupDuration = maybeProcessRollups(idle: idle)
            result = .success(summary)
        }
        return result
    }

    /// Updates metrics after a committed cycle and builds its summary.
    private func record(_ report: Loader.Report, duration: Duration) -> CycleSummary {
        metrics.cycleSeconds.observe(duration.seconds)
        metrics.cycleRows.observe(Double(report.inserted.total))
        metrics.rowsEvents.increment(by: report.inserted.events)
        metrics.rowsClicks.increment(by: report.inserted.clicks)
        metrics.rowsMatches.increment(by: report.inserted.matches)
        metrics.rowsOutsidePartitionWindow.increment(by: report.outsidePartitionWindow)
        metrics.recordsRead.increment(by: report.records)
        metrics.recordsUndecodable.increment(by: report.undecodable)
        metrics.damagedFrames.increment(by: report.damaged.count)
        for damage in report.damaged { damage.log(to: logger) }
        for (node, error) in report.unreadable.sorted(by: { $0.key < $1.key }) where unreadable[node] != error {
            logger.error(
                "log.unreadable",
                [
                    "node": node, "error": error,
                    "hint": "its records from there are not loaded (the other nodes' are); see segments verify",
                ])
        }
        for node in unreadable.keys.sorted() where report.unreadable[node] == nil {
            logger.info("log.readable_again", ["node": node])
        }
        unreadable = report.unreadable
        metrics.unreadableNodes.set(Double(unreadable.count))
        if let newest = report.newestReceivedAt, lastNewestLoaded.map({ $0 < newest }) ?? true {
            lastNewestLoaded = newest
            metrics.newestLoaded.set(Double(newest.microseconds) / 1e6)
        }
        if report.compressedBytesRead > 0, report.records > 0 {
            recordsPerCompressedByte = Double(report.records) / Double(report.compressedBytesRead)
        }
        lastPositions.merge(report.positions) { $1 }
        let behind = report.bytesBehind.values.reduce(0, +)
        setLag(bytesBehind: behind)
        if report.inserted.total > 0 || report.undecodable > 0 {

            logger.debug(
                "cycle.done",
                [
                    "records": "\(report.records)", "rows.events": "\(report.inserted.events)",
                    "rows.clicks": "\(report.inserted.clicks)", "rows.matches": "\(report.inserted.matches)",
                    "rows.outside_partition_window": "\(report.outsidePartitionWindow)",
                    "rollup.keys": "\(report.touchedKeys)", "backlog": "\(report.backlog)",
                    "cycle.ms": "\(Int(duration.seconds * 1000))",
                ])
        }
        return CycleSummary(
            ran: true, records: report.records, undecodable: report.undecodable, events: report.inserted.events,
            clicks: report.inserted.clicks, matches: report.inserted.matches,
            outsidePartitionWindow: report.outsidePartitionWindow, damagedFrames: report.damaged.count,
            unreadableNodes: report.unreadable, touchedKeys: report.touchedKeys,
            backlog: report.backlog, duration: duration,
            phases: Dictionary(report.phases, uniquingKeysWith: +))
    }

    /// Sets the lag gauges from the compressed bytes not yet loaded.
    private func setLag(bytesBehind behind: Int64) {
        metrics.lagBytes.set(Double(behind))
        if behind == 0 {
            metrics.lagEvents.set(0)
            metrics.lagSeconds.set(0)
            return
        }
        metrics.lagEvents.set((Double(behind) * recordsPerCompressedByte).rounded())
        if let newest = lastNewestLoaded {
            metrics.lagSeconds.set(max(0, Double(Timestamp.now().microseconds - newest.microseconds) / 1e6))
        }
    }

    /// While PostgreSQL is failing the lag still grows: measured from the last committed positions
    /// (nodes never loaded count from their start).
    private func updateLagWhileFailing() {
        guard let nodes = try? loader.source.nodes() else { return }
        let behind = nodes.reduce(Int64(0)) { $0 + loader.source.bytesBehind(node: $1, after: lastPositions[$1]) }
        setLag(bytesBehind: behind)
    }

    /// One line per state change, never per retry.
    private func log(_ change: LoadStateMachine.StateChange?) {
        switch change {
        case .startedFailing(let reason, let retryIn)?:
            logger.error("load.failing", ["error": reason, "retry.in.s": String(format: "%.2f", retryIn.seconds)])
        case .recovered(let attempts)?:
            logger.notice("load.recovered", ["failed.attempts": "\(attempts)"])
        case .becameStandby?:
            logger.notice("load.standby", ["reason": "another aggregator holds the load lock"])
        case .becameActive?:
            logger.notice("load.active")
        case nil:
            break
        }
    }

    /// Deletes loaded, old segments through the event log's retention, at most every
    /// `retentionCheckInterval`.
    private func runRetention(_ report: Loader.Report) {
        guard let retention, let age = configuration.retainLoadedSegmentsFor else { return }
        let now = ContinuousClock.now
        if let last = lastRetention, now - last < configuration.retentionCheckInterval { return }
        lastRetention = now
        for (node, position) in report.positions.sorted(by: { $0.key < $1.key }) {
            do {
                let deleted = try retention(node, position, age)
                if !deleted.isEmpty {
                    logger.info("retention.deleted", ["node": node, "segments": "\(deleted.count)"])
                }
            } catch {
                logger.warning("retention.failed", ["node": node, "error": "\(error)"])
            }
        }
    }
}
