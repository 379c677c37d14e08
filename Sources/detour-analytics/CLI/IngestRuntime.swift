import EventLog
import Foundation
import Ingest
import Observability

/// The ingest half of the pipeline, started from `PipelineOptions`: the event log, the dead-letter
/// log, the key store, the report connection pool and the HTTP server, stopped in the reverse order.
final class IngestRuntime {
    let server: IngestServer
    private let reports: PostgresReportProvider
    private let log: LogWriter
    private let deadLetters: LogWriter
    private let keys: KeyStore

    /// Starts every part; `databaseURL` is where the API keys come from (cached on disk, so a
    /// PostgreSQL outage does not stop ingest from accepting known keys).
    init(options: PipelineOptions, databaseURL: String) throws {
        try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true)
        log = try LogWriter(configuration: options.log)
        deadLetters = try LogWriter(configuration: options.deadLetter)
        keys = KeyStore(
            source: PostgresKeySource(url: databaseURL), cacheFile: options.dataDirectory + "/keys.json",
            refreshInterval: options.ingest.keyRefreshInterval)
        keys.start()
        // The report API reads the views through its own small pool, one connection per report
        // worker, opened on first use (so ingest starts while PostgreSQL is down).
        reports = .reports(databaseURL: databaseURL, poolSize: options.ingest.reportThreads)
        server = try IngestServer(
            configuration: options.ingest, keys: keys, sink: log, deadLetterSink: deadLetters, reportProvider: reports)
    }

    /// Stops accepting, lets in-flight requests become durable, then closes the logs.
    func stop() {
        server.shutdown()
        reports.close()
        keys.stop()
        log.close()
        deadLetters.close()
    }
}
