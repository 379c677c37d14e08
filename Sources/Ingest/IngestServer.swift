package import Observability
import Synchronization

/// The ingest HTTP edge, assembled: server, routes, keys, group commit into the sinks.
///
/// Concurrency: libmicrohttpd owns its worker threads (one epoll loop each) and runs routing,
/// auth, decompression and normalisation there; finished requests are suspended. With a sink that
/// completes appends itself (the event log, `CompletingEventSink`), a request without dead letters
/// is queued in the log by the worker and the log's sync thread resumes the connection with the
/// answer; other requests go to the commit queue, whose threads append to the sinks and resume the
/// connections.
/// Report requests are suspended the same way and run on the report workers (`ReportQueue`).
package final class IngestServer: Sendable {
    private let server: HTTPServer
    private let service: IngestService
    private let logger = Logger(label: "ingest")
    /// Held for the whole of `shutdown()`, so a second caller returns only once the first has
    /// closed the port (it returned at once before, while the first still waited for requests).
    private let stopping = Mutex(())

    /// Starts serving.
    /// - Parameters:
    ///   - configuration: validated configuration.
    ///   - keys: the started key store.
    ///   - sink: where accepted envelopes go (the event log).
    ///   - deadLetterSink: where refused events and requests go (the dead-letter log).
    ///   - reportProvider: what serves `GET /api/reports/*` (on `reportThreads` worker threads);
    ///     nil answers those routes 503 `reports_unavailable`.
    ///   - metrics: the registry `/metrics` renders; defaults to the shared one.
    /// - Throws: `HTTPServerError` when the address cannot be bound.
    package init(
        configuration: IngestConfiguration, keys: KeyStore, sink: any EventSink, deadLetterSink: any EventSink,
        reportProvider: (any ReportProvider)? = nil, metrics: MetricsRegistry = .shared
    ) throws(HTTPServerError) {
        let service = IngestService(
            configuration: configuration, keys: keys, sink: sink, deadLetterSink: deadLetterSink,
            reportProvider: reportProvider, registry: metrics)
        self.service = service
        do {
            self.server = try HTTPServer(
                settings: HTTPServerSettings(configuration), handler: service, budget: service.budget)
        } catch {
            // No server will call shutdown(): stop the worker threads the service started.
            service.reports?.stop()
            service.commits.stop()
            throw error
        }
        let open = metrics.gauge("ingest_http_connections", help: "HTTP connections open now")
        metrics.gauge("ingest_http_connection_limit", help: "--connection-limit").set(
            Double(configuration.connectionLimit))
        metrics.addCollector { [weak server = self.server] in open.set(Double(server?.openConnections ?? 0)) }
        logger.info(
            "server.started",
            [
                "http.host": configuration.host, "http.port": String(server.port),
                "http.threads": String(configuration.threads),
            ])
        if configuration.maxBufferedBodyBytes < configuration.largestRequestBytes {
            logger.warning(
                "server.budget_below_request",
                [
                    "budget.bytes": String(configuration.maxBufferedBodyBytes),
                    "largest_request.bytes": String(configuration.largestRequestBytes),
                    "reason":
                        "a request whose body and events need more than --max-buffered-bodies is let through only"
                        + " while no other request is held, and SDK events may be answered 503 overloaded while it is;"
                        + " raise --max-buffered-bodies or lower --max-decompressed",
                ])
        }
    }

    /// The bound port (the ephemeral one when configured with port 0).
    package var port: UInt16 { server.port }

    /// Report requests waiting for a report worker (for tests and diagnostics).
    var waitingReports: Int { service.reports?.waiting ?? 0 }

    /// Quiesces: `/readyz` turns 503 and new events are refused, the listening socket closes,
    /// in-flight requests finish (their events are made durable), then the server stops.
    /// Every caller, a concurrent or later one too, returns once the server has stopped.
    package func shutdown() {
        stopping.withLock { _ in
            guard !service.isShuttingDown.exchange(true, ordering: .relaxed) else { return }
            // New connections are refused from here (a load balancer retries them elsewhere), also
            // while running reports finish below: until 2026-12-05 the socket stayed open until
            // then, and an event on a connection made meanwhile was answered 503 shutting_down,
            // which an SDK drops and a load balancer does not retry.
            server.stopAccepting()
            // Waiting reports are answered 503 now and running ones finish, so no connection stays
            // suspended on a report while the daemon stops.
            service.reports?.stop()
            server.shutdown()
            service.commits.stop()
            logger.info("server.stopped", [:])
        }
    }

    /// Request bytes held now (`maxBufferedBodyBytes`): bodies of requests not yet completed, and
    /// the envelope lines and dead letters of read requests not yet durable.
    package var bufferedBodyBytes: Int { server.bufferedBodyBytes }

    /// Requests whose head was read and that are not answered yet (for tests and diagnostics).
    package var inFlightRequests: Int { server.inFlightRequests }

    deinit { shutdown() }
}
