import EventLog
import Foundation
import Locking
import TestSupport
import Testing

/// A flood of concurrent large batches against a real `serve` with a small request budget
/// (`--max-buffered-bodies`): what does not fit is refused 503 `overloaded` (with `Retry-After`),
/// nothing acknowledged is lost, the budget is never crossed, SDK single events sent meanwhile are
/// all accepted (their reserve), and the server keeps serving.
@Suite(.serialized)
struct FloodTests {
    /// The envelope ids (`id`) of every record in the node's event log.
    static func loggedIDs(_ data: String) throws -> Set<String> {
        let reader = try LogReader(directory: data + "/segments", node: "node-1")
        var ids: Set<String> = []
        var position: LogPosition?
        while true {
            let batch = try reader.read(after: position, maxRecords: 10_000, maxBytes: 8 << 20)
            #expect(batch.damaged.isEmpty)
            for index in 0..<batch.count {
                let object = try JSONSerialization.jsonObject(with: Data(batch[index])) as? [String: Any]
                if let id = object?["id"] as? String { ids.insert(id) }
            }
            if batch.isEmpty || batch.next == position { return ids }
            position = batch.next
        }
    }

    @Test(
        "a flood of large batches over the request budget: refused 503 overloaded, every acknowledged event logged, served after"
    )
    func floodOverTheBudget() throws {
        let budget = 1 << 20
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-flood")
        let environment = ["DATABASE_URL": database.url]
        let app = try AppKeys.create(id: "flood-app", environment: environment)
        let serve = try PipelineProcess(
            [
                "serve", "--http-addr", "127.0.0.1:0", "--data-dir", data.path, "--max-buffered-bodies", "1MiB",
            ],
            environment: environment)
        let address = try #require(
            serve.waitForLine(startingWith: "listening on http://127.0.0.1:", timeout: .seconds(120)))
        let port = try #require(
            address.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) })

        // 24 clients at once, each up to 6 batches of 600 events (~140 KB of body, more as envelope
        // lines): several times the 1 MiB budget in flight. Bounded by count; the clients pause
        // after a 503 and go on with their next batch.
        let load = LoadClient(clients: 24, app: app, batchSize: 600, maxRequests: 6, prefix: "flood") { port }
        // Meanwhile an SDK's single events, as the SDKs send them (which never retry): 4 clients,
        // each one after another until the flood has ended (at most 2,000 events in all).
        let singles = Locked((acknowledged: Set<String>(), statuses: [Int: Int]()))
        let senders = (0..<4).map { client in
            Thread {
                for n in 0..<500 where !load.isFinished {
                    let id = "single-\(client)-\(n)"
                    let body =
                        #"{"event_id":"\#(id)","event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","#
                        + #""platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
                    let status =
                        RawHTTP.post(
                            port: port, "/api/analytics/event", key: app.publishable, app: app.id,
                            body: Array(body.utf8), timeout: 60)?.status ?? 0
                    singles.withLock {
                        if status == 200 { $0.acknowledged.insert(id) }
                        $0.statuses[status, default: 0] += 1
                    }
                }
            }
        }
        senders.forEach { $0.start() }
        load.stop(whenIdleWithin: .seconds(300))
        let deadline = ContinuousClock.now + .seconds(120)
        while senders.contains(where: { !$0.isFinished }), ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let sdk = singles.withLock { $0 }
        let tally = load.snapshot
        let metrics = try #require(RawHTTP.metrics(port: port))
        let overloaded = Int(metrics[#"ingest_requests_total{code="overloaded",route="batch",status="503"}"#] ?? 0)

        #expect(Set(tally.statuses.keys).isSubset(of: [200, 503]), "statuses: \(tally.statuses)")
        #expect((tally.statuses[200] ?? 0) > 0)
        #expect(overloaded > 0, "the flood crossed the budget")
        #expect(overloaded == tally.statuses[503] ?? 0, "every 503 was overloaded")
        #expect(tally.unavailableWithoutRetryAfter == 0)
        // Every single event was accepted while batches were refused: small requests have a reserve
        // of a quarter of the budget. (A flood of large bodies seldom fills the budget to within a
        // single event's bytes; ConnectionLimitTests.bodyBudget fills it exactly.)
        #expect(Set(sdk.statuses.keys) == [200], "single events: \(sdk.statuses)")
        // The budget held: never more than it (and the small requests' reserve) at once, and all
        // of it given back.
        let peak = Int(metrics["ingest_buffered_bytes_peak"] ?? -1)
        #expect(peak > 0 && peak <= budget + budget / 4, "peak \(peak) of \(budget) + \(budget / 4)")
        #expect(Int(metrics["ingest_buffered_bytes_limit"] ?? 0) == budget)
        // A body's charge is given back in libmicrohttpd's completion callback, which runs after the
        // answer was written: the client may have read it first.
        var buffered = metrics["ingest_buffered_bytes"]
        #expect(
            eventually(timeout: .seconds(30)) {
                buffered = RawHTTP.metrics(port: port)?["ingest_buffered_bytes"]
                return buffered == 0
            }, "ingest_buffered_bytes \(buffered ?? -1)")

        // Still serving: a batch now is accepted.
        let after = LoadClient(clients: 1, app: app, batchSize: 10, maxRequests: 1, prefix: "after") { port }
        after.stop(whenIdleWithin: .seconds(60))
        #expect(after.snapshot.statuses == [200: 1])

        serve.signal(SIGTERM)
        #expect(serve.waitForExit(timeout: .seconds(60)) == 0)
        // 1 MiB is below what one request may need (--max-body 1 MiB plus its events): said at start.
        #expect(serve.standardError.contains("server.budget_below_request"), "\(serve.standardError)")
        let logged = try Self.loggedIDs(data.path)
        let acknowledged = tally.acknowledged.union(after.snapshot.acknowledged).union(sdk.acknowledged)
        #expect(acknowledged.count == 600 * (tally.statuses[200] ?? 0) + 10 + sdk.acknowledged.count)
        let lost = acknowledged.subtracting(logged)
        #expect(lost.isEmpty, "\(lost.count) acknowledged events are not in the log")
    }
}

extension LoadClient {
    /// Waits (bounded by `timeout`) until every client thread has sent its `maxRequests`.
    func stop(whenIdleWithin timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        while !isFinished, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        stop()
    }
}
