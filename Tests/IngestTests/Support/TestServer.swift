import Foundation
@testable import Ingest
import Observability

/// A real ingest server on 127.0.0.1, an ephemeral port, in-memory sinks and fixed keys.
final class TestServer {
    static let app = "app_acme"
    static let otherApp = "app_other"
    static let publishableKey = "pk_test_acme_123"
    static let secretKey = "sk_test_acme_456"
    static let otherKey = "pk_test_other_789"

    let sink = MemorySink()
    let deadLetters = MemorySink()
    let keySource: StaticKeySource
    let keys: KeyStore
    let metrics = MetricsRegistry()
    let server: IngestServer
    let directory: String

    init(configure: (inout IngestConfiguration) -> Void = { _ in }, sink: (any EventSink)? = nil) throws {
        directory = NSTemporaryDirectory() + "ingest-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        keySource = StaticKeySource([
            APIKeyRecord(appID: Self.app, kind: .publishable, key: Self.publishableKey),
            APIKeyRecord(appID: Self.app, kind: .secret, key: Self.secretKey),
            APIKeyRecord(appID: Self.otherApp, kind: .publishable, key: Self.otherKey),
        ])
        keys = KeyStore(source: keySource, cacheFile: directory + "/keys.json", refreshInterval: .seconds(10))
        keys.start()
        var configuration = IngestConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configure(&configuration)
        try configuration.validate()
        server = try IngestServer(
            configuration: configuration, keys: keys, sink: sink ?? self.sink, deadLetterSink: deadLetters,
            metrics: metrics)
    }

    deinit {
        server.shutdown()
        keys.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func client() throws -> RawHTTPClient { try RawHTTPClient(port: server.port) }

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
