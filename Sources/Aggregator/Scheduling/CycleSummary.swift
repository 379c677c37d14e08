import EventModel
import Foundation
import Observability

/// What one load cycle did, as `runOnce()` returns it and `aggregate --once` prints it.
package struct CycleSummary: Sendable, Equatable {
    /// False when another aggregator held the load lock and this cycle did nothing.
    package var ran: Bool
    /// Log records read (duplicates and undecodable records included).
    package var records: Int
    /// Records skipped because they are not valid envelopes.
    package var undecodable: Int
    /// New rows in `events`.
    package var events: Int
    /// New rows in `clicks`.
    package var clicks: Int
    /// New rows in `matches`.
    package var matches: Int
    /// New rows (any table) whose day is outside the partition window of their `received_at`: left
    /// in the default partition (docs/aggregator.md, "Partitions").
    package var outsidePartitionWindow = 0
    /// Damaged frames skipped (their records are not loaded; each is logged with its file and offset).
    package var damagedFrames = 0
    /// The nodes whose log could not be read (an I/O error), with the error: their loads stopped
    /// where the error was, the other nodes' went on.
    package var unreadableNodes: [String: String] = [:]
    /// (app, day) keys whose rollups were queued (`process_rollups()` applies them later).
    package var touchedKeys: Int
    /// True when a batch bound was hit and more records are waiting.
    package var backlog: Bool
    /// Wall time of the cycle.
    package var duration: Duration
    /// Time per step inside the transaction: `read+copy`, `copy+dedup` (or `dedup+copy` when the
    /// cycle deduplicated first), `derive`, `devices+links`, `rollups`, `commit`.
    package var phases: [String: Duration] = [:]
    /// The rollup pass (`process_rollups()`, its own transaction) run right after this cycle, if one
    /// ran: after a cycle without backlog, or when `rollupInterval` had passed. Not in `duration`.
    package var rollupDuration: Duration?
    /// The apps whose queued rollups that pass held back: the server does not know their time zone.
    package var heldRollups: [HeldRollups] = []

    /// New raw rows in all tables.
    package var rows: Int { events + clicks + matches }

    /// The cycles' phases summed, as `name=1.234s` in name order separated by spaces (`decimals`
    /// digits); empty when no cycle recorded any. What `aggregate --once` and `bench loader` print.
    package static func phaseTotals(_ cycles: some Sequence<CycleSummary>, decimals: Int) -> String {
        cycles.reduce(into: [String: Duration]()) { $0.merge($1.phases, uniquingKeysWith: +) }
            .sorted { $0.key < $1.key }
            .map { "\($0.key)=\(String(format: "%.\(decimals)f", $0.value.seconds))s" }
            .joined(separator: " ")
    }

    /// A summary of a cycle that did not run.
    static func skipped(duration: Duration) -> CycleSummary {
        CycleSummary(
            ran: false, records: 0, undecodable: 0, events: 0, clicks: 0, matches: 0, touchedKeys: 0,
            backlog: false, duration: duration)
    }
}

/// An app whose queued rollup work the rollup passes hold back because PostgreSQL does not know its
/// time zone (a name gone from the system's tzdata): its days stay queued until the zone is installed
/// again or the app is given another (`apps update --id APP --time-zone ZONE`). sql/079.
package struct HeldRollups: Sendable, Equatable {
    /// The app.
    package var app: String
    /// Its time zone, as stored in `apps.time_zone`.
    package var timeZone: String
    /// Its (app, day) keys still queued.
    package var days: Int
}

extension HeldRollups {
    /// The warning logged when a pass first holds this app's work (`rollups.held`).
    func log(to logger: Logger) {
        logger.warning(
            "rollups.held",
            [
                "app": app, "time_zone": timeZone, "days": "\(days)",
                "hint":
                    "PostgreSQL does not know this zone: install it (tzdata, tzdata-legacy) or apps update --time-zone",
            ])
    }
}
