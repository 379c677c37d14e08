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

    package var description: String {
        switch self {
        case .invalidConfiguration(let field, let reason): "invalid configuration: \(field) \(reason)"
        case .database(let reason): "database: \(reason)"
        case .log(let node, let reason): "event log (node \(node)): \(reason)"
        case .injected(let step): "injected failure at \(step)"
        }
    }
}
