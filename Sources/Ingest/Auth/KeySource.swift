/// Which kind of API key: publishable keys ship inside apps (analytics routes of their own app
/// only); secret keys stay on servers (analytics and link routes).
package enum KeyKind: String, Codable, Sendable {
    case publishable, secret
}

/// One active API key as ingest knows it: the app, the kind and the SHA-256 hex of the key.
package struct APIKeyRecord: Codable, Sendable, Equatable {
    /// The app's public id (what clients send in `X-App-ID`).
    package var appID: String
    /// Publishable or secret.
    package var kind: KeyKind
    /// Lowercase hex SHA-256 of the key.
    package var keyHash: String

    /// Creates a record.
    package init(appID: String, kind: KeyKind, keyHash: String) {
        self.appID = appID
        self.kind = kind
        self.keyHash = keyHash.lowercased()
    }

    /// Creates the record for a plain `key` (tests and tooling; the server never sees stored keys).
    package init(appID: String, kind: KeyKind, key: String) {
        self.init(appID: appID, kind: kind, keyHash: SHA256.hex(Array(key.utf8)))
    }

    enum CodingKeys: String, CodingKey {
        case appID = "app_id", kind, keyHash = "key_hash"
    }
}

/// Where `KeyStore` loads the active (not revoked) keys from; PostgreSQL in production.
package protocol KeySource: Sendable {
    /// Every active key; throws when the source cannot be reached.
    func loadKeys() throws -> [APIKeyRecord]
}

/// The lowercase hex SHA-256 of `key`, as stored in `api_keys.key_hash`.
package func apiKeyHash(_ key: String) -> String { SHA256.hex(Array(key.utf8)) }
