extension Connection {
    /// A stable 64-bit advisory lock key for a name (FNV-1a), so every process agrees on it.
    package static func advisoryKey(_ name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    /// Takes a session-level advisory lock if free (`pg_try_advisory_lock`); held until
    /// `advisoryUnlock` or the end of the session.
    ///
    /// - Returns: true when this session now holds the lock.
    package func tryAdvisoryLock(key: Int64) throws(PostgresError) -> Bool {
        try query("select pg_try_advisory_lock(\(key)::bigint) as locked").first?["locked", as: Bool.self] ?? false
    }

    /// Waits for a session-level advisory lock (`pg_advisory_lock`).
    package func advisoryLock(key: Int64) throws(PostgresError) {
        _ = try query("select pg_advisory_lock(\(key)::bigint)")
    }

    /// Releases a session-level advisory lock; false when this session did not hold it.
    @discardableResult
    package func advisoryUnlock(key: Int64) throws(PostgresError) -> Bool {
        try query("select pg_advisory_unlock(\(key)::bigint) as unlocked").first?["unlocked", as: Bool.self] ?? false
    }

    /// Takes a transaction-level advisory lock if free (`pg_try_advisory_xact_lock`), released at
    /// COMMIT or ROLLBACK. Call inside `withTransaction`.
    ///
    /// - Returns: true when this transaction now holds the lock.
    package func tryAdvisoryTransactionLock(key: Int64) throws(PostgresError) -> Bool {
        try query("select pg_try_advisory_xact_lock(\(key)::bigint) as locked").first?["locked", as: Bool.self]
            ?? false
    }

    /// Waits for a transaction-level advisory lock (`pg_advisory_xact_lock`).
    package func advisoryTransactionLock(key: Int64) throws(PostgresError) {
        _ = try query("select pg_advisory_xact_lock(\(key)::bigint)")
    }
}
