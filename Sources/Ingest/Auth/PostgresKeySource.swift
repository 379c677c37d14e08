import Postgres

/// Loads active API keys from PostgreSQL: `api_keys` rows whose `revoked_at` is null.
/// Opens a connection per load (every `keyRefreshInterval`), so a restarted database is simply
/// picked up on the next refresh.
///
/// No load waits on the database for long: ingest's start-up and its serial refresh timer both
/// run loads, and one that never returned would stall the start or stop new keys from being picked
/// up. So a load's connection has `connect_timeout` (libpq waits forever by default) and
/// `tcp_user_timeout` (a server gone from the network after connecting: unacknowledged data gives
/// up instead of being sent again for ~15 minutes) of `timeoutSeconds` unless the URL sets them,
/// TCP keepalives after `timeoutSeconds` idle (a server gone while the load waits for its answer:
/// nothing unacknowledged, so only the kernel's ~2 hour keepalive noticed, and until 2026-12-05 the
/// serial refresh timer, new keys and revocations waited that long), and sets `statement_timeout`
/// to it (a query waiting on a lock, as behind a migration that holds `api_keys`).
package struct PostgresKeySource: KeySource {
    private let url: String
    private let timeoutSeconds: Int

    /// Creates a source for the database at `url` (a libpq URL or keyword string).
    package init(url: String, timeoutSeconds: Int = 5) {
        self.url = url
        self.timeoutSeconds = timeoutSeconds
    }

    /// A connection as each load opens it, with the source's timeouts.
    func connect() throws(PostgresError) -> Connection {
        try Connection(
            url: url, connectTimeout: timeoutSeconds, tcpUserTimeout: timeoutSeconds * 1000,
            keepaliveSeconds: timeoutSeconds)
    }

    /// Every active key; throws `PostgresError` when the database is unreachable, and
    /// `UnmigratedSchema` when it lacks `api_keys`.
    package func loadKeys() throws -> [APIKeyRecord] {
        let connection = try connect()
        defer { connection.close() }
        try connection.unsafeSQL("set statement_timeout = \(timeoutSeconds * 1000)")
        let rows: QueryResult
        do {
            rows = try connection.query(
                "select app_id, kind, key_hash from api_keys where revoked_at is null order by app_id, key_hash")
        } catch {
            // `keys.refresh_failed` said only `relation "api_keys" does not exist`, while ingest
            // answered every request 503: the hint names the fix, as the aggregator's and reports' do.
            guard !error.missingSchemaHint.isEmpty else { throw error }
            throw UnmigratedSchema(description: "\(error)\(error.missingSchemaHint)")
        }
        var records: [APIKeyRecord] = []
        for row in rows {
            guard let kind = KeyKind(rawValue: try row["kind", as: String.self]) else { continue }
            records.append(
                APIKeyRecord(
                    appID: try row["app_id", as: String.self], kind: kind,
                    keyHash: try row["key_hash", as: String.self]))
        }
        return records
    }

    /// A database without the schema `loadKeys` reads, described with what to run.
    package struct UnmigratedSchema: Error, CustomStringConvertible {
        package let description: String
    }
}
