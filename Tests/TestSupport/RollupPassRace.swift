package import Postgres

/// A rollup pass caught half way for the one-snapshot report tests: on `session`, a transaction
/// that holds `rollup_link_summary` (which the links report reads after the watermark) while it
/// moves the watermark on an hour and adds 1000 clicks to every link-day, until `commit()`. A
/// report started meanwhile reads the watermark, then waits for the summary: its statements fall
/// on either side of the commit.
package struct RollupPassRace {
    let session: Connection

    package init(on session: Connection) throws {
        self.session = session
        try session.unsafeSQL(
            """
            BEGIN; LOCK TABLE rollup_link_summary IN ACCESS EXCLUSIVE MODE;
            UPDATE load_checkpoints SET newest_received_at = newest_received_at + interval '1 hour';
            UPDATE rollup_link_summary SET clicks = clicks + 1000, clicks_ios = clicks_ios + 1000
            """)
    }

    /// Whether a report waits for the summary now (at most 60 s of looking).
    package func reportWaits() throws -> Bool {
        try eventually {
            try session.query(
                "SELECT count(*) AS n FROM pg_locks WHERE relation = 'rollup_link_summary'::regclass AND NOT granted"
            ).first?["n", as: Int.self] == 1
        }
    }

    /// Commits the pass.
    package func commit() throws { try session.unsafeSQL("COMMIT") }
}
