import EventLog
import Foundation
import Ingest
import Observability

/// The ingest half of the pipeline, started from `PipelineOptions`: the event log, the dead-letter
/// log, the key store and the HTTP server, stopped in the reverse order.
final class IngestRuntime {
    let server: IngestServer
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
        server = try IngestServer(configuration: options.ingest, keys: keys, sink: log, deadLetterSink: deadLetters)
    }

    /// Stops accepting, lets in-flight requests become durable, then closes the logs.
    func stop() {
        server.shutdown()
        keys.stop()
        log.close()
        deadLetters.close()
    }
}
