import Postgres

/// Loads active API keys from PostgreSQL: `api_keys` rows whose `revoked_at` is null.
/// Opens a connection per load (every `keyRefreshInterval`), so a restarted database is simply
/// picked up on the next refresh.
package struct PostgresKeySource: KeySource {
    private let url: String

    /// Creates a source for the database at `url` (a libpq URL or keyword string). Unless the
    /// string sets `connect_timeout`, one of `connectTimeoutSeconds` is added: libpq waits forever
    /// by default, and a blackholed database must not stall start-up or the refresh timer.
    package init(url: String, connectTimeoutSeconds: Int = 5) {
        self.url = Self.withConnectTimeout(url, seconds: connectTimeoutSeconds)
    }

    /// `url` with `connect_timeout=<seconds>` added when it has none.
    static func withConnectTimeout(_ url: String, seconds: Int) -> String {
        guard !url.contains("connect_timeout") else { return url }
        if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
            return url + (url.contains("?") ? "&" : "?") + "connect_timeout=\(seconds)"
        }
        return url + " connect_timeout=\(seconds)"
    }

    /// Every active key; throws `PostgresError` when the database is unreachable, and
    /// `UnmigratedSchema` when it lacks `api_keys`.
    package func loadKeys() throws -> [APIKeyRecord] {
        let connection = try Connection(url: url)
        defer { connection.close() }
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
