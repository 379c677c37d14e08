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
    private let deadLetterPruner: (any DispatchSourceTimer)?

    /// Starts every part; `databaseURL` is where the API keys come from (cached on disk, so a
    /// PostgreSQL outage does not stop ingest from accepting known keys).
    init(options: PipelineOptions, databaseURL: String) throws {
        try DataDirectory.prepare(options.dataDirectory)
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
        deadLetterPruner = Self.startPruning(options)
    }

    /// Every 10 s, deletes dead letters past `--dead-letter-retention` and, oldest first, beyond half
    /// of `--dead-letter-max-disk`: the writer refuses dead letters at the cap itself, so a flood
    /// between two passes is bounded, and the passes make room again. Nil when neither bound is set.
    private static func startPruning(_ options: PipelineOptions) -> (any DispatchSourceTimer)? {
        guard options.deadLetterRetention != nil || options.deadLetterMaxBytes != nil else { return nil }
        let logger = Logger(label: "ingest")
        let configuration = options.deadLetter
        let (age, keep) = (options.deadLetterRetention, options.deadLetterMaxBytes.map { $0 / 2 })
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "ingest.deadletter-pruning"))
        var failing = false
        timer.setEventHandler {
            do {
                try LogRetention.prune(
                    directory: configuration.directory, node: configuration.node, olderThan: age, keepBytes: keep)
                failing = false
            } catch {
                // Once per outage, like the logs' own failures.
                if !failing { logger.error("deadletter.prune_failed", ["error": "\(error)"]) }
                failing = true
            }
        }
        timer.schedule(deadline: .now(), repeating: .seconds(10))
        timer.resume()
        return timer
    }

    /// Stops accepting, lets in-flight requests become durable, then closes the logs.
    func stop() {
        deadLetterPruner?.cancel()
        server.shutdown()
        reports.close()
        keys.stop()
        log.close()
        deadLetters.close()
    }
}

/// The data directory, created (with its parents) or refused with a reason an operator can act on.
/// Foundation's error read `Error Domain=NSCocoaErrorDomain Code=516 "A file with the same name
/// already exists." UserInfo={...}` for a file in the way.
enum DataDirectory {
    /// Why the data directory cannot be used.
    struct Unusable: Error, CustomStringConvertible {
        let description: String
    }

    /// Creates `path` and its parents as needed; it must end up a directory this process can write.
    /// The data directory itself, when made here, is the owner's only (0700): it holds every event,
    /// the dead letters and the key cache. Missing parents get the usual 0755.
    /// - Throws: `Unusable` naming the path and the reason.
    static func prepare(_ path: String) throws(Unusable) {
        var prefix = path.hasPrefix("/") ? "" : "."
        let components = path.split(separator: "/")
        for (position, component) in components.enumerated() {
            prefix += "/" + component
            if mkdir(prefix, position == components.count - 1 ? 0o700 : 0o755) != 0, errno != EEXIST {
                let reason = String(cString: strerror(errno))
                throw Unusable(description: "data directory \(path): cannot create \(prefix): \(reason)")
            }
        }
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw Unusable(description: "data directory \(path) exists and is not a directory")
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw Unusable(description: "data directory \(path) is not writable: \(String(cString: strerror(errno)))")
        }
    }
}
