internal import CLibPQ

extension Connection {
    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// Nested calls use savepoints: an inner block that throws rolls back only its own work and
    /// rethrows. A transaction that the server aborted (a statement failed and `body` swallowed the
    /// error) is not silently rolled back at COMMIT: it throws `PostgresError.server` (25P02).
    ///
    /// - Throws: whatever `body` throws (after rolling back), or the error of BEGIN/COMMIT.
    @discardableResult
    package func withTransaction<T>(_ body: (Connection) throws -> T) throws -> T {
        let depth = transactionDepth
        let savepoint = "detour_sp_\(depth)"
        try unsafeSQL(depth == 0 ? "BEGIN" : "SAVEPOINT \(savepoint)")
        transactionDepth = depth + 1
        let value: T
        do {
            value = try body(self)
        } catch {
            transactionDepth = depth
            if depth == 0 {
                try? unsafeSQL("ROLLBACK")
            } else {
                try? unsafeSQL("ROLLBACK TO SAVEPOINT \(savepoint); RELEASE SAVEPOINT \(savepoint)")
            }
            throw error
        }
        transactionDepth = depth
        if depth > 0 {
            try unsafeSQL("RELEASE SAVEPOINT \(savepoint)")
            return value
        }
        let conn = try liveHandle()
        let result = try check(PQexec(conn, "COMMIT"), query: "COMMIT", expecting: [PGRES_COMMAND_OK])
        // COMMIT of an aborted transaction "succeeds" with the command tag ROLLBACK.
        if String(cString: PQcmdStatus(result.pointer)) == "ROLLBACK" {
            throw PostgresError.server(
                sqlState: "25P02", message: "the transaction was aborted by an earlier error and rolled back",
                detail: nil, hint: "a statement inside withTransaction failed and its error was caught",
                query: nil)
        }
        return value
    }

    /// True while inside `withTransaction`.
    package var isInTransaction: Bool { transactionDepth > 0 }
}
