import Foundation
import Ingest
import Postgres

/// `apps keys create` and `apps keys revoke`, and the keys `apps create` issues.
extension AppsCommand {
    static func createKey(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let app = try arguments.required("--app")
        let kind = try arguments.required("--kind")
        let json = arguments.flag("--json")
        let url = try arguments.databaseURL(environment)
        try arguments.finish()
        try checkAppID(app, flag: "--app")
        guard let keyKind = KeyKind(rawValue: kind) else {
            throw UsageError(description: "--kind must be publishable or secret, got \(kind.prefix(40))")
        }
        let connection = try Connection(url: try requireDatabase(url))
        defer { connection.close() }
        let key = try connection.withTransaction { connection in
            // Holds the app's row (FOR KEY SHARE: it cannot be deleted under us), and does not wait
            // for an `apps update` of its settings, whose rollup rebuild can take minutes: until
            // 2026-12-05 (FOR UPDATE) a key command of that app waited for all of it.
            guard try !connection.query("SELECT 1 FROM apps WHERE id = \(app) FOR KEY SHARE").isEmpty else {
                throw AppsError.noSuchApp(app)
            }
            return try insertKey(connection, app: app, kind: keyKind)
        }
        if json {
            try printJSON(["app_id": app, "kind": kind, "key": key, "prefix": String(key.prefix(prefixLength))])
        } else {
            print("\(kind) key for \(app): \(key)")
            print("It is shown only now. Once no client uses the old key: apps keys revoke --app \(app) --prefix ...")
        }
        return 0
    }

    static func revokeKey(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let app = try arguments.required("--app")
        let key = try arguments.option("--key")
        let prefix = try arguments.option("--prefix")
        let force = arguments.flag("--force")
        let url = try arguments.databaseURL(environment)
        try arguments.finish()
        try checkAppID(app, flag: "--app")
        let match: SQL
        switch (key, prefix) {
        // Hashed here: a key sent as a parameter would be in the server's log wherever statements
        // are logged with their parameters (log_statement, log_min_duration_statement).
        case (let key?, nil): match = "key_hash = \(apiKeyHash(key))"
        case (nil, let prefix?): match = "prefix = \(prefix)"
        default: throw UsageError(description: "name the key with exactly one of --key and --prefix")
        }
        let connection = try Connection(url: try requireDatabase(url))
        defer { connection.close() }
        let revoked = try connection.withTransaction { connection -> [String] in
            // Two revocations of the app's last two keys at once take turns (a lock per app and
            // schema), so the second sees the first's and is refused as the last key. Not the app's
            // row FOR UPDATE (until 2026-12-05): revoking a leaked key waited behind an `apps update`
            // of the same app and its rollup rebuild, minutes.
            // 1684370539 is 'detk' (the load lock's first key is 'detr', LoadSQL.lock).
            _ = try connection.query(
                "SELECT pg_advisory_xact_lock(1684370539, hashtext(current_schema() || ':' || \(app)))::text AS l")
            _ = try connection.query("SELECT 1 FROM apps WHERE id = \(app) FOR KEY SHARE")
            let rows = try connection.query(
                """
                SELECT kind, prefix, revoked_at IS NOT NULL AS revoked FROM api_keys
                WHERE app_id = \(app) AND \(fragment: match) FOR UPDATE
                """)
            let active = try rows.filter { try !$0["revoked", as: Bool.self] }
            guard !rows.isEmpty else {
                let known = try !connection.query("SELECT 1 FROM apps WHERE id = \(app)").isEmpty
                throw known ? AppsError.noSuchKey(app: app) : AppsError.noSuchApp(app)
            }
            guard !active.isEmpty else { throw AppsError.alreadyRevoked(app: app) }
            guard active.count == 1 else { throw AppsError.ambiguousPrefix(app: app, count: active.count) }
            // The last active key of its kind: revoked, its clients are refused until a new key
            // reaches them (until 2026-12-05 nothing asked; the documented order is issue, move, revoke).
            let kind = try active[0]["kind", as: String.self]
            let others =
                try connection.query(
                    """
                    SELECT count(*) AS n FROM api_keys
                    WHERE app_id = \(app) AND kind = \(kind) AND revoked_at IS NULL AND NOT (\(fragment: match))
                    """
                ).first?["n", as: Int.self] ?? 0
            guard others > 0 || force else { throw AppsError.lastKey(app: app, kind: kind) }
            try connection.execute(
                """
                UPDATE api_keys SET revoked_at = now()
                WHERE app_id = \(app) AND \(fragment: match) AND revoked_at IS NULL
                """)
            return try active.map { "\(try $0["kind", as: String.self]) key \(try $0["prefix", as: String.self])" }
        }
        print(
            "revoked the \(revoked.joined()) of \(app); running ingest stops accepting it within 30 seconds"
                + " (once it can reach PostgreSQL)")
        return 0
    }

    /// Inserts a new key of `kind` for `app` (which must exist) and returns it in plain text.
    static func insertKey(_ connection: Connection, app: String, kind: KeyKind) throws -> String {
        let key = kind.tokenPrefix + randomToken(bytes: kind.tokenBytes)
        // Only the hash and the displayed prefix leave this process: the key itself as a parameter
        // would be written to the server's log wherever statements are logged with their parameters.
        try connection.execute(
            """
            INSERT INTO api_keys (app_id, kind, key_hash, prefix)
            VALUES (\(app), \(kind.rawValue), \(apiKeyHash(key)), \(String(key.prefix(prefixLength))))
            """)
        return key
    }

    /// A URL-safe random token from the system's cryptographic generator (getrandom on Linux).
    static func randomToken(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        // 62 symbols; rejection sampling keeps every symbol equally likely.
        var out: [UInt8] = []
        while out.count < bytes * 4 / 3 {
            let byte = UInt8.random(in: 0...255, using: &generator)
            if byte < 248 { out.append(alphabet[Int(byte) % 62]) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
