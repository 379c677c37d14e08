import EventModel

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
    /// (app, day) keys whose rollups were refreshed.
    package var touchedKeys: Int
    /// True when a batch bound was hit and more records are waiting.
    package var backlog: Bool
    /// Wall time of the cycle.
    package var duration: Duration
    /// Time per step inside the transaction: `read+copy`, `insert`, `rollups`, `commit`.
    package var phases: [String: Duration] = [:]

    /// New raw rows in all tables.
    package var rows: Int { events + clicks + matches }

    /// A summary of a cycle that did not run.
    static func skipped(duration: Duration) -> CycleSummary {
        CycleSummary(
            ran: false, records: 0, undecodable: 0, events: 0, clicks: 0, matches: 0, touchedKeys: 0,
            backlog: false, duration: duration)
    }
}
