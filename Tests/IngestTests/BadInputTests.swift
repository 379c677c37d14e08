import EventModel
import Foundation
import Testing

@testable import Ingest

/// Every bad input of issue 3: status, stable code, a trace in the dead-letter log where a body
/// was read, and a server that still serves afterwards.
@Suite("Bad input is refused with a clear reason")
struct BadInputTests {
    static let event = Array(
        #"{"event_name":"purchase","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
            .utf8)

    @Test("a body that is not JSON is 400 invalid_json with the byte offset, and dead-lettered")
    func invalidJSON() throws {
        let server = try TestServer()
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(),
            body: Array(#"{"event_name": purchase}"#.utf8))
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_json")
        let message = (response.json["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.contains("at byte "))
        #expect(server.sink.records.isEmpty)
        let deadLetters = server.deadLetters.lines
        #expect(deadLetters.count == 1)
        #expect(deadLetters.first?.contains(#""code":"invalid_json""#) == true)
        #expect(deadLetters.first?.contains(#""raw_base64":"#) == true)
        #expect(deadLetters.first?.contains(#""encoding""#) == false)  // sent uncompressed
        #expect(server.isServing())
    }

    @Test("JSON that is not an object is 400 not_an_object")
    func notAnObject() throws {
        let server = try TestServer()
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Array("[1,2]".utf8))
        #expect(response.status == 400)
        #expect(response.errorCode == "not_an_object")
        #expect(server.isServing())
    }

    @Test("a batch over the event limit is 400 too_many_events")
    func tooManyEvents() throws {
        let server = try TestServer { $0.maxBatchEvents = 2 }
        let event = String(decoding: Self.event, as: UTF8.self)
        let body = "{\"batch\":[\(event),\(event),\(event)]}"
        let response = try server.client().request(
            "POST", "/api/analytics/batch", headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 400)
        #expect(response.errorCode == "too_many_events")
        #expect(server.isServing())
    }

    @Test("gzip and zstd bodies are accepted", arguments: ["gzip", "zstd"])
    func compressed(encoding: String) throws {
        let server = try TestServer()
        let body = encoding == "gzip" ? Compression.gzip(Self.event) : Compression.zstd(Self.event)
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders() + [("Content-Encoding", encoding)],
            body: body)
        #expect(response.status == 200, "\(response.text)")
        #expect(server.sink.records.count == 1)
    }

    @Test("a body of several gzip members or zstd frames is read whole", arguments: ["gzip", "zstd"])
    func concatenated(encoding: String) throws {
        let server = try TestServer()
        // `cat a.gz b.gz`: the event cut in two, each half compressed on its own.
        let halves = [Array(Self.event.prefix(40)), Array(Self.event.dropFirst(40))]
        let body = halves.flatMap { encoding == "gzip" ? Compression.gzip($0) : Compression.zstd($0) }
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders() + [("Content-Encoding", encoding)],
            body: body)
        #expect(response.status == 200, "\(response.text)")
        let stored = try server.storedLines().map { try Envelope(decoding: Array($0.utf8)) }
        #expect(stored.map(\.name) == ["purchase"])
        #expect(stored.map(\.device) == ["3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"])
    }

    @Test("bytes after the last gzip member are 400 invalid_encoding, not ignored")
    func gzipTrailingBytes() throws {
        let server = try TestServer()
        for trailer: [UInt8] in [[0x00], Array("{}".utf8), [0x1f, 0x8b, 0x08]] {
            let response = try server.client().request(
                "POST", "/api/analytics/event", headers: TestServer.sdkHeaders() + [("Content-Encoding", "gzip")],
                body: Compression.gzip(Self.event) + trailer)
            #expect(response.status == 400, "\(trailer)")
            #expect(response.errorCode == "invalid_encoding", "\(trailer)")
        }
        #expect(server.sink.records.isEmpty)
        #expect(server.isServing())
    }

    @Test("a decompression bomb stops at the limit with 413 decompressed_too_large", arguments: ["gzip", "zstd"])
    func bomb(encoding: String) throws {
        let server = try TestServer()  // default limits: 1 MiB on the wire, 10 MiB decompressed
        let inflated = [UInt8](repeating: UInt8(ascii: " "), count: 11 << 20)
        let body = encoding == "gzip" ? Compression.gzip(inflated) : Compression.zstd(inflated)
        #expect(body.count < 1 << 20)
        let response = try server.client().request(
            "POST", "/api/analytics/batch", headers: TestServer.sdkHeaders() + [("Content-Encoding", encoding)],
            body: body)
        #expect(response.status == 413)
        #expect(response.errorCode == "decompressed_too_large")
        #expect(server.deadLetters.lines.first?.contains("decompressed_too_large") == true)
        #expect(server.deadLetters.lines.first?.contains(#""encoding":"\#(encoding)""#) == true)  // kept as received
        #expect(server.isServing())
    }

    @Test("a body denser than the value limit is 413 too_many_values and dead-lettered; one under it is stored")
    func valueLimit() throws {
        // Default limits: 5 million zeros in an event's data, 10 MB inflated from ~10 KB of gzip, would
        // be 80 MB of scanner tape; the scan stops at 1,000,000 values.
        let server = try TestServer()
        func event(zeros: Int) -> [UInt8] {
            var body = Array(#"{"event_name":"dense","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","#.utf8)
            body += Array(#""device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","data":["#.utf8)
            body.reserveCapacity(body.count + zeros * 2 + 2)
            for index in 0..<zeros {
                body += index == 0 ? [UInt8(ascii: "0")] : [UInt8(ascii: ","), UInt8(ascii: "0")]
            }
            return body + Array("]}".utf8)
        }
        let bomb = Compression.gzip(event(zeros: 5_000_000))
        #expect(bomb.count < 64 << 10)
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders() + [("Content-Encoding", "gzip")],
            body: bomb)
        #expect(response.status == 413)
        #expect(response.errorCode == "too_many_values")
        let deadLetter = server.deadLetters.lines.first ?? ""
        #expect(deadLetter.contains(#""code":"too_many_values""#))
        // Kept as received, ~10 KB of gzip, not the 13 MB of base64 its decoded body would take.
        #expect(deadLetter.contains(#""encoding":"gzip""#) && deadLetter.utf8.count < 64 << 10)
        #expect(server.sink.records.isEmpty)
        #expect(server.isServing())

        // The limit is configurable and counts every value and key of the body: this event has 11
        // tokens besides its zeros (the object, five keys, four values and the array).
        let small = try TestServer { $0.maxValues = 1000 }
        let under = try small.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: event(zeros: 989))
        #expect(under.status == 200)
        let over = try small.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: event(zeros: 990))
        #expect(over.status == 413)
        #expect(over.errorCode == "too_many_values")
        #expect(small.sink.records.count == 1)
        #expect(small.isServing())
    }

    @Test("a body that is not valid gzip is 400 invalid_encoding")
    func corruptGzip() throws {
        let server = try TestServer()
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders() + [("Content-Encoding", "gzip")],
            body: Self.event)
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_encoding")
        #expect(server.isServing())
    }

    @Test("when the log cannot make events durable the answer is 503 log_unavailable with Retry-After")
    func sinkFailure() throws {
        let server = try TestServer()
        server.sink.setFailing(true)
        let client = try server.client()
        let response = try client.request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Self.event)
        #expect(response.status == 503)
        #expect(response.errorCode == "log_unavailable")
        #expect(response.header("Retry-After") == "1")
        server.sink.setFailing(false)
        let retried = try client.request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Self.event)
        #expect(retried.status == 200)
        #expect(server.sink.records.count == 1)
    }

    @Test("a full disk in the real event log answers 503 log_unavailable and turns readyz to 503")
    func diskFull() throws {
        // A failed append reads as "not writable" for retryAfter: long, so /readyz below is asked
        // inside that window however slowly this thread gets to it.
        let server = try TestServer(
            useLog: true,
            configureLog: {
                $0.maxDiskBytes = 1
                $0.retryAfter = .seconds(3600)
            })
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Self.event)
        #expect(response.status == 503)
        #expect(response.errorCode == "log_unavailable")
        #expect(response.header("Retry-After") != nil)
        #expect(try server.client().request("GET", "/readyz").status == 503)
        #expect(server.isServing())
    }

    @Test(
        "the per-app rate limit answers 429 with Retry-After and spares other apps, and the app's secret key (the link service)"
    )
    func rateLimit() throws {
        let server = try TestServer {
            // One token every 1,000 s: the second request is limited however late it comes.
            $0.rateLimitPerSecond = 0.001
            $0.rateLimitBurst = 1
        }
        let client = try server.client()
        #expect(
            try client.request("POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Self.event)
                .status == 200)
        let limited = try client.request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Self.event)
        #expect(limited.status == 429)
        #expect(limited.errorCode == "rate_limited")
        #expect(Int(limited.header("Retry-After") ?? "") ?? 0 >= 1)
        let other = try client.request(
            "POST", "/api/analytics/event",
            headers: TestServer.sdkHeaders(key: TestServer.otherKey, app: TestServer.otherApp), body: Self.event)
        #expect(other.status == 200)
        // The publishable key is in every copy of the app: its traffic does not spend the bucket of
        // the secret key, which the link service posts clicks with.
        let clicks = try client.request(
            "POST", "/api/link/events", headers: TestServer.sdkHeaders(key: TestServer.secretKey),
            body: Array(#"{"clicks":[]}"#.utf8))
        #expect(clicks.errorCode != "rate_limited" && clicks.status != 429, "\(clicks.status) \(clicks.text)")
        let again = try client.request(
            "POST", "/api/link/events", headers: TestServer.sdkHeaders(key: TestServer.secretKey),
            body: Array(#"{"clicks":[]}"#.utf8))
        #expect(again.status == 429)
    }

    @Test("an event over the per-event size limit is rejected, its neighbours accepted")
    func eventTooLarge() throws {
        let server = try TestServer { $0.maxEventBytes = 512 }
        let big =
            #"{"event_name":"purchase","data":{"pad":""# + String(repeating: "x", count: 600)
            + #""},"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
        let body = "{\"batch\":[\(String(decoding: Self.event, as: UTF8.self)),\(big)]}"
        let response = try server.client().request(
            "POST", "/api/analytics/batch", headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 200)
        let rejected = response.json["rejected"] as? [[String: Any]] ?? []
        #expect(rejected.first?["code"] as? String == "event_too_large")
        #expect(rejected.first?["index"] as? Int == 1)
        #expect(rejected.count == 1)
        // The neighbour is accepted and in the log, not dropped with it.
        #expect(response.json["accepted"] as? Int == 1, "\(response.text)")
        #expect(server.sink.records.count == 1)
        #expect(server.isServing())
    }

    @Test("rejections are counted in metrics by route and code, answers by route, status and error code")
    func rejectionMetrics() throws {
        let server = try TestServer()
        let client = try server.client()
        for _ in 0..<2 {
            _ = try client.request(
                "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Array("nope".utf8))
        }
        _ = try client.request("POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Self.event)
        _ = try client.request("POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Array("{}".utf8))
        // Refused from the head alone: two 401s an operator must tell apart, and a 415.
        _ = try client.request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(key: "nope"), body: Self.event)
        _ = try client.request(
            "POST", "/api/analytics/event", headers: [("Authorization", "Bearer \(TestServer.publishableKey)")],
            body: Self.event)
        _ = try client.request(
            "POST", "/api/analytics/event",
            headers: [("Content-Type", "text/plain")] + TestServer.sdkHeaders().dropFirst(),
            body: Self.event)
        let text = try client.request("GET", "/metrics").text
        // Two codes and two statuses on one route, each its own series with its own count.
        #expect(text.contains(#"ingest_events_rejected_total{code="invalid_json",route="event"} 2"#))
        #expect(text.contains(#"ingest_events_rejected_total{code="missing_field",route="event"} 1"#))
        #expect(text.contains(#"ingest_events_accepted_total{route="event"} 1"#))
        // Error answers carry their code; the 400 whose one event was rejected has no single code.
        #expect(text.contains(#"ingest_requests_total{code="invalid_json",route="event",status="400"} 2"#))
        #expect(text.contains(#"ingest_requests_total{route="event",status="400"} 1"#))
        #expect(text.contains(#"ingest_requests_total{route="event",status="200"} 1"#))
        #expect(text.contains(#"ingest_requests_total{code="invalid_key",route="event",status="401"} 1"#))
        #expect(text.contains(#"ingest_requests_total{code="missing_app_id",route="event",status="401"} 1"#))
        #expect(text.contains(#"ingest_requests_total{code="unsupported_media_type",route="event",status="415"} 1"#))
        // Nothing was read or dead-lettered for those.
        #expect(!text.contains(#"ingest_events_rejected_total{code="invalid_key""#))
        #expect(text.contains(#"ingest_bytes_in_total{route="event"}"#))
        #expect(text.contains(#"ingest_request_duration_seconds_count{route="event"} 7"#))
    }
}
