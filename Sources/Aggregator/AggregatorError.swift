import Postgres

/// What went wrong in the aggregator. Descriptions are safe to log; they never contain event data.
package enum AggregatorError: Error, CustomStringConvertible, Sendable {
    /// A configuration field is out of range.
    case invalidConfiguration(field: String, reason: String)
    /// PostgreSQL refused or dropped the connection, or a statement failed.
    case database(String)
    /// The event log could not be read.
    case log(node: String, reason: String)
    /// A test hook asked the cycle to fail at a given step (tests only).
    case injected(step: String)

    /// `.database` for a failure from PostgreSQL; a statement that names a table, column or function
    /// the schema lacks gets the likely cause added (a binary newer than the schema: `migrate` was
    /// not run), where the bare message (`column "caught_up_at" does not exist`) left it to guess.
    static func database(describing error: any Error) -> AggregatorError {
        .database("\(error)\((error as? PostgresError)?.missingSchemaHint ?? "")")
    }

    package var description: String {
        switch self {
        case .invalidConfiguration(let field, let reason): "invalid configuration: \(field) \(reason)"
        case .database(let reason): "database: \(reason)"
        case .log(let node, let reason): "event log (node \(node)): \(reason)"
        case .injected(let step): "injected failure at \(step)"
        }
    }
}
