import EventModel
import Foundation
import TestSupport
import Testing

@testable import Ingest

@Suite("Connection limits and timeouts")
struct ConnectionLimitTests {
    @Test("a client that stalls mid-headers is disconnected after the idle timeout")
    func slowClient() throws {
        let server = try TestServer { $0.connectionTimeoutSeconds = 1 }
        let client = try server.client()
        client.send(Array("POST /api/analytics/event HTTP/1.1\r\nHost: x\r\n".utf8))
        // The receive timeout is 10 s; the server closes after about 1 s of silence.
        #expect(client.isClosedByPeer())
        #expect(server.isServing())
    }

    @Test(
        "a batch many times the connection memory arrives whole; a head larger than it is refused, and the server serves on"
    )
    func connectionMemory() throws {
        let server = try TestServer(useLog: true) { $0.connectionMemoryBytes = 4096 }
        // About 120 KiB: libmicrohttpd hands it over in chunks of under 4 KiB.
        let events = (0..<400).map { index in
            #"{"event_name":"purchase","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","event_id":"chunk-\#(index)","data":{"note":"\#(String(repeating: "x", count: 200))"}}"#
        }
        let body = Array(#"{"batch":["#.utf8) + Array(events.joined(separator: ",").utf8) + Array("]}".utf8)
        #expect(body.count > 30 * 4096)
        let client = try server.client()
        let response = try client.request("POST", "/api/analytics/batch", headers: TestServer.sdkHeaders(), body: body)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["accepted"] as? Int == 400)
        let ids = try server.storedLines().map { try Envelope(decoding: Array($0.utf8)).id }
        #expect(ids == (0..<400).map { "chunk-\($0)" })

        let bigHead = TestServer.sdkHeaders() + [("X-Padding", String(repeating: "p", count: 8192))]
        let refused = try server.client().request(
            "POST", "/api/analytics/event", headers: bigHead, body: Array("{}".utf8))
        #expect(refused.status == 431)
        #expect(try client.request("GET", "/healthz").status == 200)
        #expect(server.isServing())
    }

    @Test("connections beyond the per-IP limit are refused while the first ones are served")
    func perIPLimit() throws {
        let server = try TestServer { $0.perIPConnectionLimit = 2 }
        let first = try server.client()
        let second = try server.client()
        #expect(try first.request("GET", "/healthz").status == 200)
        #expect(try second.request("GET", "/healthz").status == 200)
        let third = try server.client()
        #expect(throws: (any Error).self) { try third.request("GET", "/healthz") }
        #expect(try first.request("GET", "/healthz").status == 200)
    }

    @Test("connections beyond the total limit are not served while the first ones are, and are once those close")
    func totalLimit() throws {
        let server = try TestServer {
            $0.connectionLimit = 2
            $0.threads = 1
        }
        var first: RawHTTPClient? = try server.client()
        let second = try server.client()
        #expect(try first?.request("GET", "/healthz").status == 200)
        #expect(try second.request("GET", "/healthz").status == 200)
        // The kernel completes the handshake, but libmicrohttpd takes no third connection: it is
        // left in the listen queue or closed, so its request gets no answer.
        do {
            let third = try RawHTTPClient(port: server.server.port, timeoutSeconds: 2)
            #expect(throws: (any Error).self) { try third.request("GET", "/healthz") }
        }
        #expect(try second.request("GET", "/healthz").status == 200)
        // A slot frees when a connection closes; new connections are served again.
        first = nil
        var served = false
        for _ in 0..<50 where !served {
            served = server.isServing()
            if !served { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(served)
        #expect(try second.request("GET", "/healthz").status == 200)
    }

    @Test(
        "bodies beyond the server's body budget get 503 overloaded with Retry-After while an SDK's single event is accepted, and are served once it frees"
    )
    func bodyBudget() throws {
        let budget = 256 * 1024
        let server = try BudgetFixture.server(budget: budget)
        // An upload of the whole budget that stops 100 bytes short: the server holds its declared
        // length (its buffer is reserved for it, and charged, when the head arrives).
        let held = BudgetFixture.batch(paddedTo: budget)
        let slow = try BudgetFixture.hold(held, on: server)
        #expect(server.server.bufferedBodyBytes == held.count)
        // With the budget full, another large upload (80 KiB) is refused...
        let refused = try BudgetFixture.postBatch(BudgetFixture.batch(paddedTo: 80 * 1024), on: server)
        #expect(refused.status == 503)
        #expect(refused.errorCode == "overloaded")
        #expect(refused.header("Retry-After") == "1")
        // ...but not an SDK's single event: small requests have a reserve of a quarter of the budget,
        // since the SDKs never retry (until 2026-12-02 it was refused 503 as well).
        let single = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: BadInputTests.event)
        #expect(single.status == 200)
        // The held upload completes and is accepted (once the single event's bytes are given back:
        // its lines over the budget while another request holds bytes would be 503 too); its bytes
        // leave the budget, and the next is served.
        BudgetFixture.waitUntil(server) { $0 <= held.count }
        #expect(try BudgetFixture.finish(slow, held).status == 200)
        BudgetFixture.waitUntil(server) { $0 == 0 }
        #expect(server.server.bufferedBodyBytes == 0)
        let after = try BudgetFixture.postBatch(BudgetFixture.batch(paddedTo: 80 * 1024), on: server)
        #expect(after.status == 200)
        #expect(server.isServing())
    }

    @Test(
        "a client that sends a head and no body holds nothing of the budget; its body, once it starts, holds its length"
    )
    func headOnlyHoldsNothing() throws {
        let server = try BudgetFixture.server(budget: 256 * 1024)
        let body = BudgetFixture.batch(paddedTo: 40 * 1024)
        let client = try server.client()
        client.send(BudgetFixture.head(body.count))
        _ = eventually(timeout: .seconds(30), every: .milliseconds(10)) { server.server.inFlightRequests != 0 }
        #expect(server.server.inFlightRequests == 1, "the head was not read")
        // Until 2026-12-04 the declared 40 KiB were reserved from the head, until the idle timeout: a
        // few hundred such clients took the reserve that keeps SDK events accepted when it is full.
        #expect(server.server.bufferedBodyBytes == 0)
        client.send(Array(body.prefix(1000)))
        BudgetFixture.waitUntil(server) { $0 >= body.count }
        #expect(server.server.bufferedBodyBytes == body.count, "the body's buffer is reserved once it starts")
        client.send(Array(body.dropFirst(1000)))
        #expect(try client.readResponse().status == 200)
        BudgetFixture.waitUntil(server) { $0 == 0 }
        #expect(server.server.bufferedBodyBytes == 0)
        #expect(server.isServing())
    }

    @Test("with the budget full, an upload awaiting 100 Continue is answered 503 at once, before it sends its body")
    func budgetFullExpectContinue() throws {
        let budget = 256 * 1024
        let server = try BudgetFixture.server(budget: budget)
        let held = BudgetFixture.batch(paddedTo: budget)
        let slow = try BudgetFixture.hold(held, on: server)
        // The client sends only the head and waits for 100 Continue. Until 2026-12-02 it got it, then
        // uploaded 80 KiB that were dropped at the first chunk that did not fit, and then the 503.
        let large = BudgetFixture.batch(paddedTo: 80 * 1024)
        let waiting = try server.client()
        waiting.send(BudgetFixture.head(large.count, expectContinue: true))
        let refused = try waiting.readResponse()
        #expect(refused.status == 503)
        #expect(refused.errorCode == "overloaded")
        #expect(refused.header("Retry-After") == "1")
        // Once the held upload is done, the same request is invited to send its body, and accepted.
        #expect(try BudgetFixture.finish(slow, held).status == 200)
        BudgetFixture.waitUntil(server) { $0 == 0 }
        let invited = try server.client()
        invited.send(BudgetFixture.head(large.count, expectContinue: true))
        #expect(try invited.readResponse(hasBody: false).status == 100)
        invited.send(large)
        #expect(try invited.readResponse().status == 200)
        let text = try server.client().request("GET", "/metrics").text
        #expect(text.contains(#"ingest_requests_total{code="overloaded",route="batch",status="503"} 1"#))
        #expect(server.isServing())
    }

    @Test(
        "with the budget full, large uploads whose reservation was refused, or chunked ones, do not take the small requests' reserve: an SDK event is accepted",
        arguments: [false, true])
    func largeUploadsLeaveTheReserve(chunked: Bool) throws {
        let budget = 256 * 1024
        let server = try BudgetFixture.server(budget: budget)
        // One upload of the whole budget, held 100 bytes short: the budget is full.
        let held = BudgetFixture.batch(paddedTo: budget)
        let slow = try BudgetFixture.hold(held, on: server)
        #expect(server.server.bufferedBodyBytes == held.count)
        // Two large batches (200 KiB declared, or chunked) send their first 32 KiB and stall. Their
        // reservations are refused (a chunked body has none); until 2026-12-02 their first 64 KiB
        // were charged as a small request's (those declared large: until the audit of the reserve;
        // chunked: until the session after), and the two took the whole reserve (64 KiB), so the
        // SDK event below was 503.
        let large = BudgetFixture.batch(paddedTo: 200 * 1024)
        let stalled = try (0..<2).map { _ in try server.client() }
        for client in stalled {
            client.send(
                chunked
                    ? BudgetFixture.chunkedHead() + BudgetFixture.chunk(large.prefix(32 * 1024))
                    : BudgetFixture.head(large.count) + large.prefix(32 * 1024))
        }
        Thread.sleep(forTimeInterval: 0.3)  // not a threshold: gives the server the chance to charge them
        #expect(server.server.bufferedBodyBytes == held.count)
        let single = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: BadInputTests.event)
        #expect(single.status == 200)
        for client in stalled {
            let rest = large.dropFirst(32 * 1024)
            client.send(chunked ? BudgetFixture.chunk(rest) + Array("0\r\n\r\n".utf8) : Array(rest))
        }
        for client in stalled { #expect(try client.readResponse().errorCode == "overloaded") }
        BudgetFixture.waitUntil(server) { $0 <= held.count }
        #expect(try BudgetFixture.finish(slow, held).status == 200)
        BudgetFixture.waitUntil(server) { $0 == 0 }
        #expect(server.server.bufferedBodyBytes == 0)
    }

    @Test(
        "a gzip batch that decodes to more than 64 KiB is not a small request: refused over the budget, as uncompressed; its rejected event is counted only once dead-lettered"
    )
    func compressedBatchHasNoReserve() throws {
        let budget = 256 * 1024
        let server = try BudgetFixture.server(budget: budget)
        // 45 events of ~2.2 KB: ~98 KB decoded, ~110 KB of lines, a few hundred bytes of gzip; the
        // last has no device_id and is rejected.
        let events = (0..<45).map { index in
            let device = index == 44 ? "" : #","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b""#
            return
                #"{"event_name":"purchase","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios"\#(device),"event_id":"gz-\#(index)","data":{"note":"\#(String(repeating: "x", count: 2000))"}}"#
        }
        let rejectedMetric = #"ingest_events_rejected_total{code="missing_field",route="batch"}"#
        let decoded = Array(#"{"batch":["#.utf8) + Array(events.joined(separator: ",").utf8) + Array("]}".utf8)
        #expect(decoded.count > RequestBudget.smallRequestBytes)
        let packed = Compression.gzip(decoded)
        // An upload holding three quarters of the budget: the batch's lines cross the limit, not
        // the limit plus the reserve (until 2026-12-02, the gzip batch was accepted on the reserve).
        let holder = BudgetFixture.batch(paddedTo: 192 * 1024)
        let slow = try BudgetFixture.hold(holder, on: server)
        #expect(server.server.bufferedBodyBytes == holder.count)
        let refused = try BudgetFixture.postBatch(packed, on: server, gzip: true)
        #expect(refused.status == 503)
        #expect(refused.errorCode == "overloaded")
        // Nothing of it was dead-lettered, so nothing is counted as such (until 2026-12-04 its
        // rejected event was counted before the budget refused it, and again on every retry).
        #expect(!(try server.client().request("GET", "/metrics").text.contains(rejectedMetric)))
        // An SDK event still is accepted, and so is the batch once the budget frees.
        let single = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: BadInputTests.event)
        #expect(single.status == 200)
        _ = try BudgetFixture.finish(slow, holder)
        BudgetFixture.waitUntil(server) { $0 == 0 }
        let accepted = try BudgetFixture.postBatch(packed, on: server, gzip: true)
        #expect(accepted.status == 200)
        #expect(
            accepted.text.hasPrefix(#"{"accepted":44,"rejected":[{"index":44,"code":"missing_field""#),
            "\(accepted.text)")
        #expect(try server.client().request("GET", "/metrics").text.contains(rejectedMetric + " 1"))
        BudgetFixture.waitUntil(server) { $0 == 0 }
        #expect(server.server.bufferedBodyBytes == 0)
    }

    @Test("a refused body's dead letter is charged until written: over the budget, 503 overloaded; alone, its 4xx")
    func refusedBodyDeadLetterIsCharged() throws {
        let budget = 256 * 1024
        let server = try BudgetFixture.server(budget: budget)
        // ~100 KB of JSON the batch route refuses whole (its batch is not an array), a few hundred
        // bytes of gzip: its dead letter holds the decoded body until it is written.
        let decoded =
            Array(#"{"batch":""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 100_000) + Array(#""}"#.utf8)
        let packed = Compression.gzip(decoded)
        let holder = BudgetFixture.batch(paddedTo: 192 * 1024)
        let slow = try BudgetFixture.hold(holder, on: server)
        #expect(server.server.bufferedBodyBytes == holder.count)
        // Until 2026-12-02 the dead letter was charged to nothing: refused at once (4xx), its
        // 100 KB held in the commit queue beyond the budget.
        let crowded = try BudgetFixture.postBatch(packed, on: server, gzip: true)
        #expect(crowded.status == 503)
        #expect(crowded.errorCode == "overloaded")
        _ = try BudgetFixture.finish(slow, holder)
        BudgetFixture.waitUntil(server) { $0 == 0 }
        let alone = try BudgetFixture.postBatch(packed, on: server, gzip: true)
        #expect(alone.status == 400, "\(alone.text)")
        BudgetFixture.waitUntil(server) { $0 == 0 }
        #expect(server.server.bufferedBodyBytes == 0)
    }
}
