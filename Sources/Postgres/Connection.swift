internal import CLibPQ
import Foundation

/// One blocking connection to PostgreSQL through libpq.
///
/// The connection string is anything `PQconnectdb` accepts: a `postgresql://user@host:port/db?...`
/// URL or a `host=... dbname=...` keyword string. After connecting, the session is set to
/// `DateStyle ISO`, `TimeZone UTC` and `client_encoding UTF8`, so timestamps decode the same way
/// everywhere and `::date` casts are UTC days (reports convert to an app's zone explicitly).
///
/// Concurrency: a connection is used by one thread at a time (the aggregator's serial queue, one
/// request handler); it may move between threads. Share work across threads with one connection each.
///
/// Transactions: `withTransaction` nests by savepoints: an inner block that throws rolls back to
/// its savepoint and rethrows; the outermost block commits or rolls back the whole transaction.
package final class Connection: @unchecked Sendable {
    // @unchecked Sendable: the PGconn is owned by this object alone and freed in deinit; callers use
    // a connection from one thread at a time (documented above), which is libpq's own rule.
    private var handle: OpaquePointer?
    var transactionDepth = 0
    /// The server's WARNINGs since the last `takeWarnings()`; libpq's notice receiver appends to it
    /// (on the thread running the statement, the connection's one user at a time).
    private let warnings = ServerWarnings()

    /// The idle seconds before TCP keepalive probes on a connection that does not say otherwise.
    /// (No `tcp_user_timeout` by default: a COPY into a busy server may legitimately wait on a
    /// full receive window for longer than any short bound.)
    package static let defaultKeepaliveSeconds = 10

    /// Opens a connection.
    ///
    /// - Parameters:
    ///   - url: a `postgresql://` URL or libpq keyword string.
    ///   - applicationName: shown in `pg_stat_activity`, unless `url` sets `application_name`.
    ///   - connectTimeout: seconds to wait for the server, unless `url` sets `connect_timeout`
    ///     (libpq's own default is to wait forever, which would stall a retry loop).
    ///   - tcpUserTimeout: milliseconds sent data may stay unacknowledged before the connection
    ///     is given up (a server gone from the network after connecting), unless `url` sets
    ///     `tcp_user_timeout`; nil leaves the kernel's default (~15 minutes of retransmissions).
    ///   - keepaliveSeconds: TCP keepalive probes after this many idle seconds, then every
    ///     half as many, 3 unanswered giving the connection up, unless `url` sets `keepalives_*`:
    ///     a server gone from the network while this side waits for an answer (nothing unsent, so
    ///     `tcp_user_timeout` does not apply) is noticed in about twice this time instead of the
    ///     kernel's ~2 hours. A live server's kernel answers the probes, a long query included.
    ///     nil leaves the kernel's default. Default `defaultKeepaliveSeconds` (10 s: a vanished
    ///     server noticed in about 25 s) for every connection: until 2026-12-05 only ingest's key
    ///     loads and report connections set it, and a cron job (`report daily`, `aggregate --once`,
    ///     `migrate`) or the aggregator waiting for an answer from a server that had dropped off
    ///     the network waited ~2 hours, overlapping the next runs.
    /// - Throws: `PostgresError.connection` with libpq's message (never the password).
    package init(
        url: String, applicationName: String = "detour-analytics", connectTimeout: Int = 10,
        tcpUserTimeout: Int? = nil, keepaliveSeconds: Int? = Connection.defaultKeepaliveSeconds
    ) throws(PostgresError) {
        // Keywords before `dbname` are defaults: the expanded URL overrides them (expand_dbname = 1).
        var keywords = ["application_name", "connect_timeout"]
        var values = [applicationName, String(connectTimeout)]
        if let tcpUserTimeout {
            keywords.append("tcp_user_timeout")
            values.append(String(tcpUserTimeout))
        }
        if let keepaliveSeconds {
            keywords += ["keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count"]
            values += ["1", String(max(1, keepaliveSeconds)), String(max(1, keepaliveSeconds / 2)), "3"]
        }
        keywords.append("dbname")
        values.append(url)
        let connection: OpaquePointer? = withCStringArray(keywords) { keywordPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let conn = connection else {
            throw .connection(message: "out of memory allocating a connection")
        }
        handle = conn
        guard PQstatus(conn) == CONNECTION_OK else {
            // libpq may quote the part of the URL it could not parse, the password included.
            let message = Connection.redactingPasswords(in: Connection.errorMessage(conn), url: url)
            PQfinish(conn)
            handle = nil
            throw .connection(message: message)
        }
        // NOTICEs ("already exists, skipping") are noise; WARNINGs are kept for the caller: a
        // migration says with one what it could not do (sql/072 without CREATEROLE), and they were
        // dropped with the notices, so `migrate` succeeded without a word of it.
        PQsetNoticeReceiver(
            conn,
            { arg, result in
                guard let arg, let result else { return }
                guard let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))),
                    String(cString: severity) == "WARNING",
                    let message = PQresultErrorField(result, Int32(UInt8(ascii: "M")))
                else { return }
                let warnings = Unmanaged<ServerWarnings>.fromOpaque(arg).takeUnretainedValue()
                // Bounded: a long-lived connection nobody takes them from (the aggregator's, where
                // a non-owner's ANALYZE warns every cycle) must not grow.
                if warnings.messages.count < ServerWarnings.limit { warnings.messages.append(String(cString: message)) }
            }, Unmanaged.passUnretained(warnings).toOpaque())
        try setUpSession()
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// The libpq connection parameters in use that have a value (`PQconninfo`), by keyword: the
    /// defaults given to `init` unless the URL set its own.
    package var parameters: [String: String] {
        guard let handle, let options = PQconninfo(handle) else { return [:] }
        defer { PQconninfoFree(options) }
        var parameters: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { parameters[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return parameters
    }

    /// The WARNINGs the server sent since the last call (their primary message), oldest first.
    package func takeWarnings() -> [String] {
        defer { warnings.messages = [] }
        return warnings.messages
    }

    /// Closes the connection; later calls throw `PostgresError.closed`. Closing twice is harmless.
    package func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        transactionDepth = 0
    }

    /// The server's major version number, e.g. 150018 for 15.18.
    package var serverVersion: Int {
        guard let handle else { return 0 }
        return Int(PQserverVersion(handle))
    }

    /// True when the connection is open and answers a trivial query (one round trip); false also
    /// inside a transaction the server aborted (nothing but ROLLBACK works there).
    package func isHealthy() -> Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return false }
        return (try? query("select 1")) != nil
    }

    /// Re-establishes a broken connection with the same parameters (an open transaction is lost).
    ///
    /// - Throws: `PostgresError.connection` when the server is still unreachable.
    package func reconnect() throws(PostgresError) {
        guard let handle else { throw .closed }
        transactionDepth = 0
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw .connection(message: Connection.errorMessage(handle))
        }
        try setUpSession()
    }

    /// Runs a parameterised statement and returns its rows.
    ///
    /// - Throws: `PostgresError.server` with the SQLSTATE, or `.connection` when the link is lost.
    @discardableResult
    package func query(_ sql: SQL) throws(PostgresError) -> QueryResult {
        let conn = try liveHandle()
        let result = try withCStrings(sql.binds) { values in
            sql.bindTypes.withUnsafeBufferPointer { types in
                PQexecParams(
                    conn, sql.text, Int32(sql.binds.count), types.baseAddress, values, nil, nil, 0)
            }
        }
        return QueryResult(handle: try check(result, query: sql.text, expecting: [PGRES_TUPLES_OK, PGRES_COMMAND_OK]))
    }

    /// Runs a parameterised statement and returns the number of rows it affected.
    @discardableResult
    package func execute(_ sql: SQL) throws(PostgresError) -> Int {
        try query(sql).affectedRows
    }

    /// Runs SQL text as is through the simple query protocol: several statements separated by `;`,
    /// no parameters. For migrations and fixed maintenance statements only, never for values.
    package func unsafeSQL(_ text: String) throws(PostgresError) {
        let conn = try liveHandle()
        _ = try check(
            PQexec(conn, text), query: text, expecting: [PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY])
    }

    // MARK: - Internals shared with the other Connection files

    func liveHandle() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw .closed }
        return handle
    }

    /// Turns a `PGresult` into a handle, or throws the server's error (SQLSTATE, message, detail, hint).
    func check(
        _ result: OpaquePointer?, query: String?, expecting statuses: [ExecStatusType]
    ) throws(PostgresError) -> ResultHandle {
        guard let result else {
            throw .connection(message: handle.map(Connection.errorMessage) ?? "no connection")
        }
        let owned = ResultHandle(result)
        let status = PQresultStatus(result)
        if statuses.contains(status) { return owned }
        throw error(from: result, query: query)
    }

    func error(from result: OpaquePointer, query: String?) -> PostgresError {
        func field(_ code: UInt8) -> String? {
            guard let value = PQresultErrorField(result, Int32(code)) else { return nil }
            return String(cString: value)
        }
        guard let state = field(UInt8(ascii: "C")) else {
            // No SQLSTATE: the error came from libpq itself, typically a lost connection.
            let text = String(cString: PQresultErrorMessage(result)).trimmingWhitespace()
            let fallback = handle.map(Connection.errorMessage) ?? "unknown error"
            return .connection(message: text.isEmpty ? fallback : text)
        }
        return .server(
            sqlState: state, message: field(UInt8(ascii: "M")) ?? "", detail: field(UInt8(ascii: "D")),
            hint: field(UInt8(ascii: "H")), query: query)
    }

    static func errorMessage(_ conn: OpaquePointer) -> String {
        String(cString: PQerrorMessage(conn)).trimmingWhitespace()
    }

    /// The session settings the code reads results and writes SQL by, whatever the database or
    /// role sets: ISO dates in UTC, UTF-8; string literals that take backslashes as they are (the
    /// migrations' regular expressions and LIKE patterns, e.g. the revenue parser's `\s`, change
    /// meaning with `standard_conforming_strings` off); `bytea` in hex (its decoder reads only that);
    /// intervals in PostgreSQL's style (what `apps list` shows). The last three since 2026-12-05.
    private func setUpSession() throws(PostgresError) {
        try unsafeSQL(
            "SET DateStyle TO 'ISO, YMD'; SET TimeZone TO 'UTC'; SET client_encoding TO 'UTF8';"
                + " SET standard_conforming_strings TO on; SET bytea_output TO 'hex'; SET IntervalStyle TO 'postgres'")
    }
}

/// Calls `body` with a C array of NUL-terminated copies of `strings` (NULL entries stay NULL).
private func withCStrings<R>(
    _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) throws(PostgresError) -> R
) throws(PostgresError) -> R {
    if strings.isEmpty { return try body(nil) }
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } }
    defer { for pointer in pointers { free(pointer) } }
    let constPointers = pointers.map { $0.map { UnsafePointer($0) } }
    return try constPointers.withUnsafeBufferPointer { buffer throws(PostgresError) in
        try body(buffer.baseAddress)
    }
}

/// Calls `body` with a NULL-terminated C array of C strings (libpq's keyword/value arrays).
private func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
    defer { for pointer in pointers { free(pointer) } }
    let constPointers = pointers.map { $0.map { UnsafePointer($0) } }
    return constPointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        return String(scalars)
    }
}

/// What the notice receiver collects for its connection (a class: libpq holds a pointer to it).
private final class ServerWarnings {
    static let limit = 100
    var messages: [String] = []
}
