import Aggregator
import Foundation
import Locking
import Postgres

/// One `detour-analytics` command. Each lives in its own file under Commands/.
protocol Command {
    /// The word that selects it: `migrate`, `apps`, `run`, ...
    static var name: String { get }
    /// One line for the top-level help.
    static var summary: String { get }
    /// The full `--help` text: usage, flags with defaults, environment variables.
    static var help: String { get }
    /// Runs the command and returns the process exit status.
    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32
}

/// The process environment, read in exactly one place (conventions: no other code reads it).
struct Environment {
    let variables: [String: String]

    subscript(_ name: String) -> String? {
        guard let value = variables[name], !value.isEmpty else { return nil }
        return value
    }

    /// `DETOUR_DATA_DIR`, default `./data`.
    var dataDirectory: String { self["DETOUR_DATA_DIR"] ?? "data" }
}

/// Help text shared by commands that talk to PostgreSQL.
let databaseHelp = """
      --database-url URL   PostgreSQL connection URL (env DATABASE_URL; required)
    """

/// Help text shared by commands that use the data directory.
let dataDirectoryHelp = """
      --data-dir DIR       data directory holding segments/ and the key cache (env DETOUR_DATA_DIR; default ./data)
    """

extension Arguments {
    /// The database URL from `--database-url` or `DATABASE_URL`, if either is given. Commands check
    /// for it with `requireDatabase` after `finish()`, so a mistyped flag is reported as such.
    mutating func databaseURL(_ environment: Environment) throws -> String? {
        try option("--database-url", default: environment["DATABASE_URL"])
    }

    /// The data directory from `--data-dir` or `DETOUR_DATA_DIR`.
    mutating func dataDirectory(_ environment: Environment) throws -> String {
        try option("--data-dir", default: environment.dataDirectory) ?? environment.dataDirectory
    }
}

/// Writes a line to standard output at once (flushed), so scripts reading it see it immediately.
/// A failed write (a full disk under `>>/var/log/...`, a closed descriptor) is reported when the
/// command ends (`finishOutput`): `FileHandle.write`, used until 2026-12-02, crashed the process
/// on it (exit 132 and a backtrace, after `report daily` or `aggregate --once` had done their work).
func say(_ line: String) {
    print(line)
    if fflush(standardOutput) != 0 {
        let code = errno
        lostOutput.withLock { $0 = $0 ?? code }
    }
}

/// The errno of the first `say` whose line did not reach standard output.
private let lostOutput = Locked<Int32?>(nil)

/// C's `stdout`, the stream `print` writes to, read through its symbol: Swift 6 refuses the global
/// variable (shared mutable state). `nonisolated(unsafe)`: the pointer never changes, and stdio
/// locks the stream itself.
nonisolated(unsafe) private let standardOutput = dlsym(nil, "stdout")!.load(as: UnsafeMutablePointer<FILE>.self)

/// Writes `text` to standard error as it is; a failed write is dropped (there is nowhere left to
/// say so), where `FileHandle.write` crashed the process.
func complain(_ text: String) {
    var text = text
    text.withUTF8 { try? writeAll(STDERR_FILENO, UnsafeRawBufferPointer($0)) }
}

/// The exit status once standard output is flushed: `status`, or 74 (EX_IOERR) with one line on
/// standard error when something written there was lost (`print` and `say` lines, such as the keys
/// `apps create` shows only once), where the command went on as if all was well.
func finishOutput(_ status: Int32) -> Int32 {
    var code: Int32? = fflush(standardOutput) != 0 ? errno : nil
    if code == nil, ferror(standardOutput) != 0 { code = lostOutput.withLock { $0 } ?? EIO }
    guard let code else { return status }
    complain("error: writing standard output: \(String(cString: strerror(code)))\n")
    return status == 0 ? 74 : status
}

/// Writes every byte of `bytes` to `descriptor`, retrying short and interrupted writes.
///
/// - Throws: `WriteError` with the failed write's errno.
func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) throws {
    var offset = 0
    while offset < bytes.count {
        let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            throw WriteError(code: errno)
        }
        offset += written
    }
}

/// A failed `write(2)`, described by its errno's text ("No space left on device").
struct WriteError: Error, CustomStringConvertible {
    let code: Int32
    var description: String { String(cString: strerror(code)) }
}

/// The database URL, or a usage error saying how to give one.
func requireDatabase(_ url: String?) throws -> String {
    guard let url else { throw UsageError(description: "no database: pass --database-url or set DATABASE_URL") }
    return url
}

/// Says on standard error, in one line, that PostgreSQL is unreachable or failing, and returns 69
/// (EX_UNAVAILABLE): the status of every command that needs the database, so a cron job or a
/// deployment script can tell "try again later" from a bad invocation (64). libpq's own message runs
/// over two lines ("... Connection refused" and "Is the server running on that host ...?").
func databaseUnavailable(_ message: String) -> Int32 {
    let line = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
    complain("error: \(line.joined(separator: " "))\n")
    return 69  // EX_UNAVAILABLE
}

/// Runs `body`, the work of `migrate` or `apps`, and turns PostgreSQL unreachable or refusing a
/// statement (a wrong password, a schema not migrated) into `databaseUnavailable`, as `report` and
/// `aggregate --once` do; until 2026-12-02 both exited 1, as for a bug. A migration file that is
/// wrong (none in the directory, one changed after it was applied) and a column that does not
/// decode are not the database's doing: they still reach the generic handler (exit 1). With
/// `statementsAreOurs` (`migrate`, whose statements are the migration files), a statement the
/// server refuses for what it says (a syntax error, a missing privilege) is such a defect too:
/// trying again later cannot help. Only the server's "not now" classes stay 69: connection
/// exceptions (08), insufficient resources (53), operator intervention (57, a shutdown), a
/// rolled-back transaction (40, a deadlock), and a lock another session held past `lock_timeout`
/// (55P03: `migrate --lock-timeout`).
private let notNowClasses: Set<String> = ["08", "53", "57", "40"]

private func isNotNow(_ state: String) -> Bool {
    notNowClasses.contains(String(state.prefix(2))) || state == "55P03"
}

func unavailableOnDatabaseFailure(statementsAreOurs: Bool = false, _ body: () throws -> Int32) throws -> Int32 {
    do {
        return try body()
    } catch let error as PostgresError {
        switch error {
        case .server(let state, _, _, _, _) where statementsAreOurs && !isNotNow(state):
            throw error
        case .connection, .server, .copy, .closed:
            return databaseUnavailable("\(error)\(DetourAnalytics.schemaHint(error))")
        case .decoding, .migration:
            throw error
        }
    }
}

/// Whether `path` exists and is a directory (the event log's `segments/`, say).
func isDirectory(_ path: String) -> Bool {
    var directory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
}

/// `<data>/segments` when it is a directory; otherwise nil, after one line on standard error (for
/// the commands that read the event log: a mistyped --data-dir must not look like an empty log).
/// A path that cannot be reached (EACCES, ELOOP) is named with errno's words: until 2026-12-05 it
/// read "no event log", the same words as a mistyped --data-dir.
func eventLog(in data: String) -> String? {
    let segments = data + "/segments"
    switch LogSource.presence(of: segments) {
    case .present:
        return segments
    case .absent:
        complain("error: no event log at \(segments) (check --data-dir or DETOUR_DATA_DIR)\n")
    case .unreachable(let reason):
        complain("error: cannot read \(segments): \(reason)\n")
    }
    return nil
}
