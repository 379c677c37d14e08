import Dispatch
import Locking
import Observability
package import Postgres

/// A `ReportProvider` over a small pool of PostgreSQL connections: each request borrows one
/// connection, runs `render` on it, and gives it back. Ingest knows nothing of the report SQL;
/// the executable passes a `render` that calls `Reports`.
///
/// Pool: at most `poolSize` connections, opened on first use; a connection whose link is lost is
/// closed rather than returned, and a request that found a stale idle connection is retried once
/// on a fresh one. While PostgreSQL is
/// unreachable, a failed connect makes every request in the next `retryInterval` answer 503
/// `database_unavailable` at once (instead of each waiting out `connect_timeout` on a worker).
/// Every session gets `statement_timeout`, so no report holds a worker (or delays a shutdown)
/// for long.
package final class PostgresReportProvider: ReportProvider {
    /// Pool settings.
    package struct Configuration: Sendable {
        /// Most open connections. Default 4 (match `IngestConfiguration.reportThreads`).
        package var poolSize: Int = 4
        /// Seconds libpq waits to connect, unless the URL sets `connect_timeout`. Default 5 s.
        package var connectTimeoutSeconds: Int = 5
        /// Longest one report statement may run, in milliseconds (PostgreSQL `statement_timeout`).
        /// Default 30,000.
        package var statementTimeoutMilliseconds: Int = 30_000
        /// After a failed connect, requests are answered 503 without trying for this long. Default 1 s.
        package var retryInterval: Duration = .seconds(1)

        /// The defaults.
        package init() {}
    }

    private struct State {
        var idle: [Connection] = []
        var retryAfter: ContinuousClock.Instant?
    }

    private let url: String
    private let configuration: Configuration
    private let render: @Sendable (Connection, ReportRequest) -> ReportAnswer
    private let state = Locked(State())
    private let permits: DispatchSemaphore
    private let logger = Logger(label: "ingest")

    /// Makes a provider; no connection is opened until the first request.
    /// - Parameters:
    ///   - url: the PostgreSQL URL (or keyword string) of a role that can read the report views.
    ///   - configuration: pool settings.
    ///   - render: runs one report on a connection (blocking); a 5xx `.failure` discards the connection.
    package init(
        url: String, configuration: Configuration = Configuration(),
        render: @escaping @Sendable (Connection, ReportRequest) -> ReportAnswer
    ) {
        self.url = url
        self.configuration = configuration
        self.render = render
        self.permits = DispatchSemaphore(value: max(1, configuration.poolSize))
    }

    /// Borrows a connection (opening one if none is idle), renders the report, returns the connection.
    /// A 5xx on a connection that sat idle (PostgreSQL restarted, or the backend was terminated
    /// meanwhile) is retried once on a fresh connection, so a stale pool costs no failed request.
    package func respond(to request: ReportRequest) -> ReportAnswer {
        permits.wait()
        defer { permits.signal() }
        var (connection, wasIdle): (Connection, Bool)
        switch borrow(allowIdle: true) {
        case .success(let borrowed, let idle): (connection, wasIdle) = (borrowed, idle)
        case .failure(let answer): return answer
        }
        while true {
            let answer = render(connection, request)
            // A 5xx with a live link (a statement timeout, say) keeps the connection; a lost link
            // (libpq reports it without a round trip) closes it.
            let isFailure = if case .failure(let status, _, _) = answer, status >= 500 { true } else { false }
            guard isFailure, !connection.isHealthy() else {
                state.withLock { $0.idle.append(connection) }
                return answer
            }
            connection.close()
            guard wasIdle else { return answer }
            switch borrow(allowIdle: false) {
            case .success(let fresh, _): (connection, wasIdle) = (fresh, false)
            case .failure(let failure): return failure
            }
        }
    }

    /// Closes every idle connection (borrowed ones close when their request ends and they are dropped).
    package func close() {
        let idle = state.withLock { state in
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { connection.close() }
    }

    private enum Borrowed {
        case success(Connection, wasIdle: Bool)
        case failure(ReportAnswer)
    }

    private func borrow(allowIdle: Bool) -> Borrowed {
        enum Next {
            case use(Connection)
            case refuse
            case open
        }
        let next = state.withLock { state -> Next in
            if allowIdle, let connection = state.idle.popLast() { return .use(connection) }
            if let retryAfter = state.retryAfter, ContinuousClock.now < retryAfter { return .refuse }
            return .open
        }
        switch next {
        case .use(let connection): return .success(connection, wasIdle: true)
        case .refuse: return .failure(Self.unavailable)
        case .open: break
        }
        do {
            // A server gone from the network gives up within seconds, not the kernel's ~15 minutes
            // (a query sent, unacknowledged) or ~2 hours (waiting for an answer) that a worker, and
            // a shutdown waiting for it, were held until 2026-12-05.
            let connection = try Connection(
                url: url, applicationName: "detour-analytics-reports",
                connectTimeout: configuration.connectTimeoutSeconds,
                tcpUserTimeout: configuration.connectTimeoutSeconds * 1000,
                keepaliveSeconds: configuration.connectTimeoutSeconds)
            try connection.unsafeSQL("set statement_timeout = \(max(0, configuration.statementTimeoutMilliseconds))")
            let recovered = state.withLock { state in
                defer { state.retryAfter = nil }
                return state.retryAfter != nil
            }
            if recovered { logger.notice("reports.database_recovered", [:]) }
            return .success(connection, wasIdle: false)
        } catch {
            let isFirst = state.withLock { state in
                defer { state.retryAfter = ContinuousClock.now + configuration.retryInterval }
                return state.retryAfter == nil
            }
            // One line per outage, not per request.
            if isFirst { logger.error("reports.database_unavailable", ["error": "\(error)"]) }
            return .failure(Self.unavailable)
        }
    }

    private static let unavailable = ReportAnswer.failure(
        status: 503, code: "database_unavailable", message: "the report database cannot be reached; retry later")
}
