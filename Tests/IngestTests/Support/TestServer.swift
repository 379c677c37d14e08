import EventLog
import Foundation
import Observability

@testable import Ingest

/// A real ingest server on 127.0.0.1, an ephemeral port, in-memory sinks and fixed keys.
final class TestServer {
    static let app = "app_acme"
    static let otherApp = "app_other"
    static let publishableKey = "pk_test_acme_123"
    static let secretKey = "sk_test_acme_456"
    static let otherKey = "pk_test_other_789"
    static let otherSecretKey = "sk_test_other_012"

    let sink = MemorySink()
    let deadLetters = MemorySink()
    let keySource: StaticKeySource
    let keys: KeyStore
    let metrics: MetricsRegistry
    let server: IngestServer
    let directory: String
    /// The real event log and dead-letter log, when the server was made with `useLog`.
    let log: LogWriter?
    let deadLetterLog: LogWriter?

    init(
        useLog: Bool = false, sharedMetrics: Bool = false, reportProvider: (any ReportProvider)? = nil,
        configure: (inout IngestConfiguration) -> Void = { _ in },
        configureLog: (inout LogConfiguration) -> Void = { _ in }
    )
        throws
    {
        metrics = sharedMetrics ? .shared : MetricsRegistry()
        directory = NSTemporaryDirectory() + "ingest-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if useLog {
            var logConfiguration = LogConfiguration(directory: directory + "/segments")
            configureLog(&logConfiguration)
            log = try LogWriter(configuration: logConfiguration)
            deadLetterLog = try LogWriter(configuration: LogConfiguration(directory: directory + "/deadletter"))
        } else {
            log = nil
            deadLetterLog = nil
        }
        keySource = StaticKeySource([
            APIKeyRecord(appID: Self.app, kind: .publishable, key: Self.publishableKey),
            APIKeyRecord(appID: Self.app, kind: .secret, key: Self.secretKey),
            APIKeyRecord(appID: Self.otherApp, kind: .publishable, key: Self.otherKey),
            APIKeyRecord(appID: Self.otherApp, kind: .secret, key: Self.otherSecretKey),
        ])
        keys = KeyStore(source: keySource, cacheFile: directory + "/keys.json", refreshInterval: .seconds(10))
        keys.start()
        var configuration = IngestConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configure(&configuration)
        try configuration.validate()
        server = try IngestServer(
            configuration: configuration, keys: keys, sink: (log as (any EventSink)?) ?? sink,
            deadLetterSink: (deadLetterLog as (any EventSink)?) ?? deadLetters,
            reportProvider: reportProvider, metrics: metrics)
    }

    deinit {
        server.shutdown()
        log?.close()
        deadLetterLog?.close()
        keys.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func client() throws -> RawHTTPClient { try RawHTTPClient(port: server.port) }

    /// Every record made durable in the event log (or the memory sink), as text lines.
    func storedLines() throws -> [String] {
        guard log != nil else { return sink.lines }
        return try Self.read(directory + "/segments")
    }

    /// Every dead-letter record, as text lines.
    func deadLetterLines() throws -> [String] {
        guard deadLetterLog != nil else { return deadLetters.lines }
        return try Self.read(directory + "/deadletter")
    }

    private static func read(_ directory: String) throws -> [String] {
        let reader = try LogReader(directory: directory, node: "node-1")
        let batch = try reader.read(after: nil, maxRecords: 100_000, maxBytes: 64 << 20)
        return batch.records.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Headers of a current iOS SDK request.
    static func sdkHeaders(key: String = publishableKey, app: String = app) -> [(String, String)] {
        [
            ("Content-Type", "application/json"), ("Authorization", "Bearer \(key)"), ("X-App-ID", app),
            ("X-SDK", "ios/1.0.2"),
        ]
    }

    /// Whether the server still answers a health check on a fresh connection.
    func isServing() -> Bool {
        guard let client = try? client(), let response = try? client.request("GET", "/healthz") else { return false }
        return response.status == 200
    }
}
