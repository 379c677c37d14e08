/// What a simulation run did: requests and answers by status, and every answer that was not the expected one.
package struct SimulationSummary: Sendable, CustomStringConvertible {
    /// Requests answered (any status).
    package var requests = 0
    /// Events in answered requests (duplicates and invalid events included).
    package var events = 0
    /// Request bytes written (headers and bodies).
    package var bytesSent = 0
    /// Answers per HTTP status.
    package var statuses: [Int: Int] = [:]
    /// Answers that did not match the expectation (a non-2xx for an accepted request, a 2xx for a
    /// request that must be refused).
    package var unexpected = 0
    /// Requests that failed at the socket level (after one retry on a fresh connection).
    package var transportErrors = 0
    /// Extra sends after a 429 or 503 answer (only the last answer of a request is in `statuses`).
    package var retries = 0
    /// Requests never sent because the deadline passed.
    package var notSent = 0
    /// The first problems, described (at most 20).
    package var problems: [String] = []
    /// Wall time spent sending.
    package var duration: Duration = .zero
    /// Devices in the world, for context.
    package var worldDevices = 0
    /// Valid events in the world, for context.
    package var worldEvents = 0
    /// Where the truth file was written, if requested.
    package var truthPath: String?

    /// True when every request was sent and answered as expected.
    package var isSuccess: Bool { unexpected == 0 && transportErrors == 0 && notSent == 0 }

    /// Events per second over the run.
    package var eventsPerSecond: Double {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds > 0 ? Double(events) / seconds : 0
    }

    mutating func merge(_ other: SimulationSummary) {
        requests += other.requests
        events += other.events
        bytesSent += other.bytesSent
        statuses.merge(other.statuses, uniquingKeysWith: +)
        unexpected += other.unexpected
        transportErrors += other.transportErrors
        retries += other.retries
        notSent += other.notSent
        problems += other.problems.prefix(max(0, 20 - problems.count))
    }

    /// A few lines for a terminal.
    package var description: String {
        let statusText = statuses.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        var lines = [
            "world: \(worldDevices) devices, \(worldEvents) valid events",
            "sent: \(requests) requests, \(events) events, \(bytesSent) bytes in \(duration) (\(Int(eventsPerSecond)) events/s)",
            "answers: \(statusText.isEmpty ? "none" : statusText)",
            "unexpected answers: \(unexpected), transport errors: \(transportErrors), not sent: \(notSent), retries: \(retries)",
        ]
        if let truthPath { lines.append("truth: \(truthPath)") }
        lines += problems.map { "  problem: \($0)" }
        return lines.joined(separator: "\n")
    }
}
