import Postgres

/// Loads active API keys from PostgreSQL: `api_keys` rows whose `revoked_at` is null.
/// Opens a connection per load (every `keyRefreshInterval`), so a restarted database is simply
/// picked up on the next refresh.
package struct PostgresKeySource: KeySource {
    private let url: String

    /// Creates a source for the database at `url` (a libpq connection string).
    package init(url: String) { self.url = url }

    /// Every active key; throws `PostgresError` when the database is unreachable.
    package func loadKeys() throws -> [APIKeyRecord] {
        let connection = try Connection(url: url)
        defer { connection.close() }
        let rows = try connection.query(
            "select app_id, kind, key_hash from api_keys where revoked_at is null order by app_id, key_hash")
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
}
