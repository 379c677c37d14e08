/// Everything that can go wrong talking to PostgreSQL.
///
/// `description` is safe to log or show a client: it never contains query text or parameter values.
/// `debugDescription` adds the query text (still never the parameter values).
package enum PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The connection could not be made or was lost; `message` is libpq's, without passwords.
    case connection(message: String)
    /// The server refused a statement: `sqlState` is the five-character SQLSTATE (`23505`, `42601`, ...).
    case server(sqlState: String, message: String, detail: String?, hint: String?, query: String?)
    /// A column value could not be decoded as the requested Swift type.
    case decoding(column: String, message: String)
    /// A COPY failed on the client side (the feed threw, or libpq refused the data).
    case copy(message: String)
    /// The connection was used after `close()`.
    case closed
    /// A migration could not be applied or the applied history does not match the files.
    case migration(message: String)

    /// The SQLSTATE of a server error, nil for every other case.
    package var sqlState: String? {
        if case .server(let state, _, _, _, _) = self { return state }
        return nil
    }

    /// The likely cause of a server error naming a table, column or function that does not exist
    /// (SQLSTATE 42P01, 42703, 42883), in the words an operator acts on, as a suffix for the message;
    /// "" for every other error. The bare message (`relation "apps" does not exist`) left the operator
    /// to guess that the binary is newer than the schema, or that `migrate` never ran.
    package var missingSchemaHint: String {
        guard let state = sqlState, ["42P01", "42703", "42883"].contains(state) else { return "" }
        return " (the schema is older than this binary, or not there at all: run detour-analytics migrate)"
    }

    /// True for a unique violation (SQLSTATE 23505).
    package var isUniqueViolation: Bool { sqlState == "23505" }

    /// True when the error means the connection is unusable and a new one is needed.
    package var isConnectionLoss: Bool {
        switch self {
        case .connection, .closed: return true
        case .server(let state, _, _, _, _): return state.hasPrefix("08") || state == "57P01"
        default: return false
        }
    }

    /// One line, whatever the server or libpq said: it goes into log lines and into the one line a
    /// command prints on failure. libpq's message for a connection lost after connecting is three
    /// ("server closed the connection unexpectedly\n\tThis probably means the server terminated
    /// abnormally\n\tbefore or while processing the request."), and `report` printed them as they
    /// were until 2026-12-02; a server's DETAIL may span lines too.
    package var description: String {
        let text = multilineDescription
        guard text.contains(where: \.isNewline) else { return text }
        return text.split(whereSeparator: \.isNewline).map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
            .joined(separator: " ")
    }

    private var multilineDescription: String {
        switch self {
        case .connection(let message):
            return "PostgreSQL connection failed: \(message)"
        case .server(let state, let message, let detail, let hint, _):
            var text = "PostgreSQL error \(state): \(message)"
            if let detail { text += " (detail: \(detail))" }
            if let hint { text += " (hint: \(hint))" }
            return text
        case .decoding(let column, let message):
            return "cannot decode column \(column): \(message)"
        case .copy(let message):
            return "COPY failed: \(message)"
        case .closed:
            return "PostgreSQL connection is closed"
        case .migration(let message):
            return "migration failed: \(message)"
        }
    }

    package var debugDescription: String {
        if case .server(_, _, _, _, let query?) = self {
            return description + " [query: \(query)]"
        }
        return description
    }
}
