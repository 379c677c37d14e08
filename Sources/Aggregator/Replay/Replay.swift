import EventLog
import Foundation
import Observability
import Postgres

/// Reloads history from the event log and recomputes rollups: `segments replay --from SEG` and
/// `report rebuild`.
///
/// A replay reads every node's log from segment `SEG` (offset 0) to its current end in bounded
/// batches, each loaded in its own transaction under the same load lock the aggregator takes, with
/// the same deduplication: rows whose dedup key (`event_ids`, `click_ids`, `match_ids`) exists are
/// skipped even when the raw row is gone (a dropped partition: docs/aggregator.md, "Replay and rebuild",
/// has the statements that delete such orphaned keys first), the others are inserted, rollups of the
/// keys that received rows are queued and processed at the end. Checkpoints are never moved (in particular never
/// backwards): records after a checkpoint that a replay loaded are skipped as duplicates when the
/// aggregator reaches them.
package struct Replay: Sendable {
    /// What a replay did.
    package struct Summary: Sendable, Equatable {
        /// Records read from the log.
        package var records = 0
        /// New rows inserted into the raw tables (0 when everything was loaded already).
        package var rows = 0
        /// Transactions committed.
        package var batches = 0
        /// Damaged frames the reader skipped (each logged as `log.frame_damaged`): their records are
        /// not in `records`, and `segments verify` names them.
        package var damagedFrames = 0
    }

    private let configuration: AggregatorConfiguration

    /// A replayer for the configured data directory and database.
    /// - Throws: `AggregatorError.invalidConfiguration`.
    package init(configuration: AggregatorConfiguration) throws(AggregatorError) {
        try configuration.validate()
        self.configuration = configuration
    }

    /// Reloads every node's log from `segment` (inclusive) to its end, idempotently.
    /// - Parameters:
    ///   - segment: the first segment id to read (ids are per node; 0 or 1 means everything kept).
    ///   - nodes: only these nodes (default: every node under `<data>/segments`); other nodes' logs
    ///     are not read.
    ///   - maxBatches: a bound on the transactions, against a log that grows as fast as it is read.
    /// - Throws: `AggregatorError.log` for a node in `nodes` that has no directory, else
    ///   `AggregatorError` from the log or the database; batches committed before stay.
    package func replay(fromSegment segment: UInt64, nodes: [String]? = nil, maxBatches: Int = 1_000_000)
        throws(AggregatorError) -> Summary
    {
        let loader = Loader(configuration: configuration)
        defer { loader.disconnect() }
        let present = try loader.source.nodes()
        let names = nodes ?? present
        if let missing = names.first(where: { !present.contains($0) }) {
            // A mistyped --node: say so rather than replay nothing (or, before, every node).
            throw .log(node: missing, reason: "no such node directory under \(loader.source.directory)")
        }
        var positions: [String: LogPosition] = [:]
        for name in names { positions[name] = LogPosition(segment: segment, offset: 0) }
        var summary = Summary()
        let logger = Logger(label: "aggregator")
        for _ in 0..<maxBatches {
            guard let report = try loader.runCycle(mode: .replay(positions), waitForLock: true) else { break }
            summary.batches += 1
            summary.records += report.records
            summary.rows += report.inserted.total
            // Skipped frames were once skipped silently here ("5 records read", exit 0), unlike in the
            // aggregator's cycles: an operator replaying to recover data must see what was not read.
            summary.damagedFrames += report.damaged.count
            for damage in report.damaged { damage.log(to: logger) }
            // A node whose log could not be read fails the replay, as before the cycles went on
            // without such a node (what the batch loaded of the other nodes stays: it is idempotent).
            if let (node, error) = report.unreadable.min(by: { $0.key < $1.key }) {
                throw .log(node: node, reason: error)
            }
            var moved = false
            for (node, next) in report.positions where positions[node] != next {
                positions[node] = next
                moved = true
            }
            if report.records == 0 || !moved { break }
        }
        // The batches queued their rollups; apply them so the reports include what was replayed.
        for app in try loader.processRollups().held { app.log(to: logger) }
        logger.info(
            "replay.done",
            [
                "from.segment": "\(segment)", "records": "\(summary.records)", "rows": "\(summary.rows)",
                "damaged_frames": "\(summary.damagedFrames)",
            ])
        return summary
    }

    /// Recomputes every rollup from the raw tables (`rebuild_rollups()`), in one transaction under
    /// the load lock, so no cycle interleaves; readers see the old rollups until it commits.
    /// - Throws: `AggregatorError.database`.
    package func rebuildRollups() throws(AggregatorError) {
        do {
            let connection = try Connection(url: configuration.databaseURL)
            defer { connection.close() }
            try connection.withTransaction { connection in
                try connection.query(LoadSQL.lock)
                try connection.query(LoadSQL.rebuildRollups)
            }
        } catch {
            throw .database(describing: error)
        }
    }
}
