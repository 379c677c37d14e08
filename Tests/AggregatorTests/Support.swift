import EventLog
import EventModel
import Foundation
import Observability
import Postgres
import TestSupport
import Testing

@testable import Aggregator

/// A test's world: a fresh schema, a temporary data directory with one log writer per node, and
/// helpers to build envelopes and count rows.
final class World {
    let database: TestDatabase
    let dataDirectory: String
    private var writers: [String: LogWriter] = [:]
    let registry = MetricsRegistry()

    init() throws {
        database = try TestDatabase.make()
        dataDirectory = NSTemporaryDirectory() + "aggregator-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
    }

    /// Closes the writers, drops the schema and removes the directory.
    func tearDown() {
        for writer in writers.values { writer.close() }
        database.drop()
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    /// The configuration every test starts from.
    func configuration() -> AggregatorConfiguration {
        var configuration = AggregatorConfiguration(databaseURL: database.url, dataDirectory: dataDirectory)
        configuration.loadInterval = .milliseconds(50)
        configuration.backoffBase = .milliseconds(20)
        configuration.backoffCap = .milliseconds(200)
        configuration.rollupInterval = .zero  // rollups current after every cycle (tests read them at once)
        return configuration
    }

    /// An aggregator with its own metrics registry.
    func aggregator(
        _ configuration: AggregatorConfiguration? = nil, hooks: LoaderHooks = LoaderHooks()
    ) throws -> Aggregator {
        try Aggregator(
            configuration: configuration ?? self.configuration(), registry: registry, retention: nil, hooks: hooks)
    }

    /// Appends envelopes to `node`'s log as one group commit; `rollSegment` closes the writer first,
    /// so these records go to a new segment.
    func write(_ envelopes: [Envelope], node: String = "node-1", newSegment: Bool = false) throws {
        if newSegment, let writer = writers.removeValue(forKey: node) { writer.close() }
        let writer =
            try writers[node]
            ?? {
                var configuration = LogConfiguration(directory: dataDirectory + "/segments", node: node)
                configuration.groupCommitDelay = .microseconds(100)
                configuration.durability = .interval(.milliseconds(100))
                let writer = try LogWriter(configuration: configuration)
                writers[node] = writer
                return writer
            }()
        try writer.append(envelopes.map { $0.encoded() })
    }

    /// Closes `node`'s writer (the next `write` opens a new one, in a new segment).
    func closeWriter(node: String = "node-1") {
        writers.removeValue(forKey: node)?.close()
    }

    /// Closes `node`'s writer and deletes its directory, as an operator replacing the data
    /// directory would; the next `write` starts a new log (a new `log.id`).
    func replaceLog(node: String = "node-1") throws {
        writers.removeValue(forKey: node)?.close()
        try FileManager.default.removeItem(atPath: dataDirectory + "/segments/" + node)
    }

    /// A fresh connection to the test schema.
    func connect() throws -> Connection { try database.connect() }

    /// `select count(*) ...` as an Int.
    func count(_ sql: SQL) throws -> Int {
        let connection = try connect()
        defer { connection.close() }
        return try connection.query(sql).first?[0, as: Int.self] ?? -1
    }

    /// Rows of a query as arrays of optional strings, for comparisons.
    func rows(_ sql: SQL) throws -> [[String?]] {
        let connection = try connect()
        defer { connection.close() }
        let result = try connection.query(sql)
        return try result.map { row in try (0..<result.columns.count).map { try row[$0, as: String?.self] } }
    }
}

/// A timestamp from ISO text (test literals only).
func ts(_ text: String) -> Timestamp { Timestamp(iso8601: text)! }

/// An SDK action.
func event(
    _ id: String, app: String = "app_1", name: String = "purchase", device: String = "dev-1",
    time: String = "2026-06-01T10:00:00.000Z", receivedAt: String? = nil, installClick: String? = nil,
    data: String? = nil, kind: EventKind = .event
) -> Envelope {
    var envelope = Envelope(id: id, app: app, kind: kind, time: ts(time), receivedAt: ts(receivedAt ?? time))
    envelope.name = name
    envelope.device = device
    envelope.platform = .ios
    envelope.clientTimestamp = ts(time)
    if let installClick { envelope.attribution = Attribution(installClickID: installClick, openType: "deferred") }
    if let data { envelope.data = Array(data.utf8) }
    return envelope
}

/// A link click.
func click(
    _ clickID: String, app: String = "app_1", path: String = "/articles/2", time: String = "2026-06-01T09:00:00.000Z"
) -> Envelope {
    var envelope = Envelope(id: "h:" + clickID, app: app, kind: .click, time: ts(time), receivedAt: ts(time))
    envelope.clickID = clickID
    envelope.url = "https://acme.godetour.link/VnAqasAabE\(path)?utm_source=news"
    envelope.path = path
    envelope.query = [QueryParameter(name: "utm_source", value: "news")]
    envelope.platform = .ios
    envelope.clickKind = .web
    return envelope
}

/// A deferred match.
func match(_ clickID: String, app: String = "app_1", time: String = "2026-06-01T09:30:00.000Z") -> Envelope {
    var envelope = Envelope(id: "m:" + clickID, app: app, kind: .match, time: ts(time), receivedAt: ts(time))
    envelope.clickID = clickID
    envelope.method = .probabilistic
    envelope.score = 900
    return envelope
}

/// `count` distinct actions spread over devices and three days.
func manyEvents(_ count: Int, prefix: String = "e", app: String = "app_1") -> [Envelope] {
    (0..<count).map { index in
        let day = 1 + index % 3
        return event(
            "\(prefix)-\(index)", app: app, name: ["purchase", "app_open", "sign_up"][index % 3],
            device: "dev-\(index % 17)", time: "2026-06-0\(day)T1\(index % 10):00:00.000Z",
            kind: index % 3 == 1 ? .retention : .event)
    }
}
