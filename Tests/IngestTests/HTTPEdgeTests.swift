import Foundation
import Synchronization
import Testing

@testable import Ingest

@Suite("HTTP edge: routing, auth, content checks")
struct HTTPEdgeTests {
    static let event = Array(
        #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"USD"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
            .utf8)

    @Test("health check answers on an ephemeral port")
    func health() throws {
        let server = try TestServer()
        #expect(server.server.port != 0)
        let response = try server.client().request("GET", "/healthz")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
    }

    @Test("unknown path is 404 not_found and the server keeps serving")
    func notFound() throws {
        let server = try TestServer()
        let response = try server.client().request("GET", "/nope")
        #expect(response.status == 404)
        #expect(response.errorCode == "not_found")
        #expect(server.isServing())
    }

    @Test("wrong method is 405 with Allow")
    func methodNotAllowed() throws {
        let server = try TestServer()
        let response = try server.client().request("GET", "/api/analytics/event")
        #expect(response.status == 405)
        #expect(response.errorCode == "method_not_allowed")
        #expect(response.header("Allow") == "POST")
        let post = try server.client().request("POST", "/healthz")
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET")
        #expect(server.isServing())
    }

    @Test(
        "missing, unknown and foreign keys are refused",
        arguments: [
            (nil as String?, TestServer.app as String?, 401, "missing_key"),
            ("Bearer nope", TestServer.app, 401, "invalid_key"),
            ("Basic abc", TestServer.app, 401, "missing_key"),
            ("Bearer \(TestServer.publishableKey)", nil, 401, "missing_app_id"),
            ("Bearer \(TestServer.publishableKey)", TestServer.otherApp, 403, "key_not_allowed"),
            ("Bearer \(TestServer.otherKey)", TestServer.app, 403, "key_not_allowed"),
        ])
    func badKeys(authorization: String?, app: String?, status: Int, code: String) throws {
        let server = try TestServer()
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let authorization { headers.append(("Authorization", authorization)) }
        if let app { headers.append(("X-App-ID", app)) }
        let response = try server.client().request("POST", "/api/analytics/event", headers: headers, body: Self.event)
        #expect(response.status == status)
        #expect(response.errorCode == code)
        #expect(server.sink.records.isEmpty)
        #expect(server.isServing())
    }

    @Test("a publishable key cannot post link events")
    func publishableOnLinkRoute() throws {
        let server = try TestServer()
        let response = try server.client().request(
            "POST", "/api/link/events", headers: TestServer.sdkHeaders(), body: Array(#"{"clicks":[]}"#.utf8))
        #expect(response.status == 403)
        #expect(response.errorCode == "key_not_allowed")
        #expect(server.isServing())
    }

    @Test(
        "non-JSON content types are 415 unsupported_media_type",
        arguments: [
            "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1",
        ])
    func wrongContentType(type: String) throws {
        let server = try TestServer()
        var headers = TestServer.sdkHeaders()
        headers[0] = ("Content-Type", type)
        let response = try server.client().request("POST", "/api/analytics/event", headers: headers, body: Self.event)
        #expect(response.status == 415)
        #expect(response.errorCode == "unsupported_media_type")
        #expect(server.isServing())
    }

    @Test("an empty Content-Type is taken as a missing one, as an empty Content-Encoding is identity")
    func emptyContentType() throws {
        let server = try TestServer()
        var headers = TestServer.sdkHeaders()
        headers[0] = ("Content-Type", "")
        // It was 415 with the message "Content-Type  is not supported", while no header at all is accepted.
        let response = try server.client().request("POST", "/api/analytics/event", headers: headers, body: Self.event)
        #expect(response.status == 200)
        #expect(response.json["accepted"] as? Int == 1)
    }

    @Test("unknown content encodings are 415 unsupported_encoding", arguments: ["br", "deflate", "gzip, zstd"])
    func unknownEncoding(encoding: String) throws {
        let server = try TestServer()
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders() + [("Content-Encoding", encoding)],
            body: Self.event)
        #expect(response.status == 415)
        #expect(response.errorCode == "unsupported_encoding")
        // RFC 9110 15.5.16: the codings the server takes, for a client that can choose.
        #expect(response.header("Accept-Encoding") == "gzip, zstd")
        #expect(server.isServing())
    }

    @Test(
        "a declared body over the limit, or with a bad key, sent whole before the answer is read, gets its 413 or 401 and the connection serves on",
        arguments: [false, true])
    func declaredTooLarge(badKey: Bool) throws {
        // As Python's http.client and Node's fetch send: the whole body, then read. Until 2026-12-05
        // the answer was queued from the head and the connection closed with the body unread, so
        // the kernel reset it: the client saw a broken pipe, not the 413 telling it to split.
        let server = try TestServer { $0.maxBodyBytes = 4096 }
        let client = try server.client()
        let length = 3 << 20
        Self.sendHead(
            client, "/api/analytics/batch", contentLength: length,
            key: badKey ? "pk_not_a_key_of_this_app" : TestServer.publishableKey)
        let isSent = client.send([UInt8](repeating: UInt8(ascii: " "), count: length))
        #expect(isSent, "the body was cut off")
        let response = try client.readResponse()
        #expect(response.status == (badKey ? 401 : 413))
        #expect(response.errorCode == (badKey ? "invalid_key" : "body_too_large"))
        let next = try client.request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Self.event)
        #expect(next.status == 200)
        #expect(server.sink.records.count == 1)
    }

    @Test("a body declared over 16 MiB is refused from the head, before it is sent, and the connection closes")
    func declaredFarTooLarge() throws {
        let server = try TestServer()
        let client = try server.client()
        Self.sendHead(client, "/api/analytics/batch", contentLength: (16 << 20) + 1)
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.errorCode == "body_too_large")
        #expect(client.isClosedByPeer())
        #expect(server.isServing())
    }

    @Test("Expect: 100-continue with a bad key gets the 401 at once, not 100 Continue and then the 401")
    func expectContinueWithBadKey() throws {
        let server = try TestServer()
        let client = try server.client()
        // The client holds the body back until it sees 100 Continue: the refusal must come instead,
        // so it never uploads a body that would be thrown away.
        Self.sendHead(
            client, "/api/analytics/event", contentLength: Self.event.count, expectContinue: true,
            key: "pk_not_a_key_of_this_app")
        let response = try client.readResponse()
        #expect(response.status == 401)
        #expect(response.errorCode == "invalid_key")
        #expect(server.isServing())
    }

    @Test("Expect: 100-continue with a good key gets 100 Continue, then the body is accepted")
    func expectContinueWithGoodKey() throws {
        let server = try TestServer()
        let client = try server.client()
        Self.sendHead(client, "/api/analytics/event", contentLength: Self.event.count, expectContinue: true)
        let interim = try client.readResponse(hasBody: false)
        #expect(interim.status == 100)
        client.send(Self.event)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.json["accepted"] as? Int == 1)
    }

    /// Sends a POST's head with the SDK headers (and `key`) and no body.
    static func sendHead(
        _ client: RawHTTPClient, _ path: String, contentLength: Int, expectContinue: Bool = false,
        key: String = TestServer.publishableKey
    ) {
        var head = "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: \(contentLength)\r\n"
        if expectContinue { head += "Expect: 100-continue\r\n" }
        for (name, value) in TestServer.sdkHeaders(key: key) { head += "\(name): \(value)\r\n" }
        client.send(Array((head + "\r\n").utf8))
    }

    /// A whole second request, which a party framing the body otherwise would read out of it.
    static var smuggled: String {
        "POST /api/analytics/event HTTP/1.1\r\nHost: x\r\nContent-Length: \(event.count)\r\n"
            + TestServer.sdkHeaders().map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
            + String(decoding: event, as: UTF8.self)
    }

    /// Sends `head` with the SDK headers and then `body` on a new connection, and expects 400
    /// `invalid_framing`, the connection closed, nothing stored, and the server still serving.
    static func expectFramingRefused(_ head: String, body: String, on server: TestServer) throws {
        let client = try server.client()
        let head = head + TestServer.sdkHeaders().map { "\($0.0): \($0.1)\r\n" }.joined()
        client.send(Array((head + "\r\n" + body).utf8))
        let response = try client.readResponse()
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_framing")
        #expect(client.isClosedByPeer(), "the connection stays open after a refused framing")
        #expect(server.sink.records.isEmpty)
        #expect(server.isServing())
    }

    @Test(
        "Transfer-Encoding beside Content-Length, or a transfer coding but chunked, is 400 invalid_framing and the connection closes: nothing smuggled in the body is served",
        arguments: [("chunked", true), ("gzip, chunked", false), ("identity", false)])
    func ambiguousFraming(coding: String, withLength: Bool) throws {
        // A proxy going by Content-Length would take the second request for a request of its own.
        var head = "POST /api/analytics/event HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(coding)\r\n"
        if withLength { head += "Content-Length: 5\r\n" }
        try Self.expectFramingRefused(head, body: "0\r\n\r\n" + Self.smuggled, on: try TestServer())
    }

    @Test(
        "Content-Length given twice with different values, or Transfer-Encoding given twice, is 400 invalid_framing and the connection closes: nothing smuggled is served",
        arguments: [false, true])
    func repeatedFraming(transferEncoding: Bool) throws {
        var head = "POST /api/analytics/event HTTP/1.1\r\nHost: x\r\n"
        let body: String
        if transferEncoding {
            // Read as one "chunked" by one party and as "chunked, chunked" (not a valid list) by another.
            head += "Transfer-Encoding: chunked\r\ntransfer-encoding: chunked\r\n"
            body = "0\r\n\r\n" + Self.smuggled
        } else {
            // A proxy going by the last Content-Length forwards one request; going by the first, the
            // server would have read a second one from its body.
            let first = String(decoding: Self.event, as: UTF8.self)
            head +=
                "Content-Length: \(Self.event.count)\r\ncontent-length: \(Self.event.count + Self.smuggled.utf8.count)\r\n"
            body = first + Self.smuggled
        }
        try Self.expectFramingRefused(head, body: body, on: try TestServer())
    }

    @Test(
        "a blank before a header's colon, or chunked HTTP/1.0, is 400 invalid_framing and the connection closes: nothing smuggled is served",
        arguments: [false, true])
    func malformedFraming(http10: Bool) throws {
        // libmicrohttpd reads `Transfer-Encoding : chunked` as a header named with the blank and
        // frames the body by Content-Length; a proxy that trims the name reads it as chunked. And
        // HTTP/1.0 has no chunked coding (RFC 9112 6.1), yet the connection was kept open.
        let head =
            http10
            ? "POST /api/analytics/event HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n"
            : "POST /api/analytics/event HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n"
        try Self.expectFramingRefused(head, body: "0\r\n\r\n" + Self.smuggled, on: try TestServer())
    }

    @Test(
        "a Content-Length beyond Int's range (2^63 to 2^64 - 1) is 413 from the head, without 100 Continue",
        arguments: ["9223372036854775808", "18446744073709551615"], [false, true])
    func hugeContentLength(length: String, expectContinue: Bool) throws {
        let server = try TestServer()
        let client = try server.client()
        var head = "POST /api/analytics/event HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\n"
        if expectContinue { head += "Expect: 100-continue\r\n" }
        for (name, value) in TestServer.sdkHeaders() { head += "\(name): \(value)\r\n" }
        client.send(Array((head + "\r\n").utf8))
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.errorCode == "body_too_large")
        #expect(client.isClosedByPeer())
        #expect(server.isServing())
    }

    @Test("Content-Length given twice with one value is read as that length (RFC 9112 6.3)")
    func repeatedSameLength() throws {
        let server = try TestServer()
        let client = try server.client()
        var head = "POST /api/analytics/event HTTP/1.1\r\nHost: x\r\n"
        head += "Content-Length: \(Self.event.count)\r\nContent-Length: \(Self.event.count) \r\n"
        for (name, value) in TestServer.sdkHeaders() { head += "\(name): \(value)\r\n" }
        client.send(Array((head + "\r\n").utf8) + Self.event)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(server.sink.records.count == 1)
        #expect(server.isServing())
    }

    @Test("a chunked body growing past the limit is 413 and never buffered")
    func streamedTooLarge() throws {
        let server = try TestServer { $0.maxBodyBytes = 4096 }
        let client = try chunkedBatch(on: server)
        let chunk = [UInt8](repeating: UInt8(ascii: " "), count: 3000)
        for _ in 0..<2 { client.send(Array("bb8\r\n".utf8) + chunk + Array("\r\n".utf8)) }
        client.send(Array("0\r\n\r\n".utf8))
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.errorCode == "body_too_large")
        // Never more than the limit held: a server that read all 6,000 bytes and then answered 413
        // passed this test until 2026-12-05.
        let metrics = try server.client().request("GET", "/metrics").text
        let peak = metrics.split(separator: "\n").first { $0.hasPrefix("ingest_buffered_bytes_peak ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
        #expect(peak.map { $0 > 0 && $0 <= 4096 } == true, "ingest_buffered_bytes_peak \(String(describing: peak))")
        #expect(server.isServing())
    }

    @Test("a chunked body streamed past twice the limit closes the connection and is counted as 413")
    func streamedFarTooLarge() throws {
        let server = try TestServer { $0.maxBodyBytes = 4096 }
        let client = try chunkedBatch(on: server)
        let chunk = [UInt8](repeating: UInt8(ascii: " "), count: 3000)
        // 12,000 bytes, more than twice 4,096, and the body does not end: the server stops reading.
        for _ in 0..<4 where client.send(Array("bb8\r\n".utf8) + chunk + Array("\r\n".utf8)) {}
        #expect(client.isClosedByPeer())
        // No answer reached the client, but the refusal is counted like the 413 it would have been
        // (it was counted nowhere before 2026-11-30).
        let text = try server.client().request("GET", "/metrics").text
        #expect(text.contains(#"ingest_requests_total{code="body_too_large",route="batch",status="413"} 1"#))
        #expect(server.isServing())
    }

    /// A client that has sent the head of a chunked batch request with the SDK headers; the body is
    /// the caller's to stream.
    private func chunkedBatch(on server: TestServer) throws -> RawHTTPClient {
        let client = try server.client()
        var head = "POST /api/analytics/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        for (name, value) in TestServer.sdkHeaders() { head += "\(name): \(value)\r\n" }
        client.send(Array((head + "\r\n").utf8))
        return client
    }

    @Test("metrics are Prometheus text with requests by route and status")
    func metrics() throws {
        let server = try TestServer()
        _ = try server.client().request("GET", "/nope")
        _ = try server.client().request("GET", "/healthz")
        let response = try server.client().request("GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("text/plain") == true)
        #expect(response.text.contains(#"ingest_requests_total{code="not_found",route="unmatched",status="404"} 1"#))
        #expect(response.text.contains(#"ingest_requests_total{route="healthz",status="200"} 1"#))
        #expect(response.text.contains("ingest_request_duration_seconds_bucket"))
    }

    @Test("metrics include the event log's append and fsync latency")
    func logMetrics() throws {
        // A node of this test's own: the shared registry has every writer's series, and any writer
        // made by another test showed the names (until 2026-12-05 that was all this checked).
        let node = "metrics-" + UUID().uuidString.prefix(8)
        let server = try TestServer(useLog: true, sharedMetrics: true, configureLog: { $0.node = node })
        let post = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Self.event)
        #expect(post.status == 200)
        let text = try server.client().request("GET", "/metrics").text
        func count(_ histogram: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(histogram + "_count{") && $0.contains("node=\"\(node)\"") }
                .flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        #expect(count("eventlog_append_seconds") == 1, "\(text.split(separator: "\n").filter { $0.contains(node) })")
        #expect((count("eventlog_fsync_seconds") ?? 0) >= 1)
        #expect(text.contains("ingest_requests_total"))
    }

    @Test("malformed HTTP is answered or dropped by the server, which keeps serving")
    func malformedHTTP() throws {
        let server = try TestServer()
        // Answered with an error status, or closed (an end of file or a reset): a server that did
        // neither, and left the client to its read timeout, passed until 2026-12-05 (`try?`).
        func answeredOrDropped(_ client: RawHTTPClient, _ what: String) {
            do {
                let response = try client.readResponse()
                #expect(response.status >= 400, "\(what): \(response.status)")
            } catch {
                let text = "\(error)"
                #expect(
                    text.contains("closed before a response") || text.contains("recv failed: \(ECONNRESET)"),
                    "\(what): neither answered nor dropped: \(text)")
            }
        }
        let garbage = try server.client()
        garbage.send(Array("\u{01}\u{02} NOT HTTP AT ALL\r\n\r\n".utf8))
        answeredOrDropped(garbage, "garbage")
        let huge = try server.client()
        huge.send(
            Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 64 * 1024))\r\n\r\n".utf8)
        )
        answeredOrDropped(huge, "a 64 KiB header")
        #expect(server.isServing())
    }

    @Test(
        "a request target in absolute form reaches the route of its path (RFC 9112 3.2.2: servers must accept it)",
        arguments: [
            ("POST", "http://127.0.0.1/api/analytics/event", 200),
            ("POST", "HTTPS://ingest.example.com:443/api/analytics/event?x=1", 200),
            ("GET", "http://127.0.0.1", 404),
            ("GET", "http://127.0.0.1/healthz", 200),
        ])
    func absoluteForm(method: String, target: String, status: Int) throws {
        let server = try TestServer()
        let body = method == "POST" ? Self.event : []
        let headers = method == "POST" ? TestServer.sdkHeaders() : []
        let response = try server.client().request(method, target, headers: headers, body: body)
        #expect(response.status == status)
        if status == 404 { #expect(response.errorCode == "not_found") }
    }

    @Test("a query string does not change the route")
    func queryString() throws {
        let server = try TestServer()
        #expect(try server.client().request("GET", "/healthz?probe=1").status == 200)
    }

    @Test("readyz turns 503 when the log is not writable")
    func readiness() throws {
        let server = try TestServer()
        #expect(try server.client().request("GET", "/readyz").status == 200)
        server.sink.setFailing(true)
        let response = try server.client().request("GET", "/readyz")
        #expect(response.status == 503)
        #expect(response.header("Retry-After") != nil)
    }

    @Test("keep-alive serves several requests on one connection")
    func keepAlive() throws {
        let server = try TestServer()
        let client = try server.client()
        for _ in 0..<5 {
            #expect(try client.request("GET", "/healthz").status == 200)
        }
    }

    @Test("the prepared single-event answer is sent whole on many connections at once, between other answers")
    func sharedAnswer() throws {
        let server = try TestServer()
        let batch = Array(#"{"batch":[\#(String(decoding: Self.event, as: UTF8.self)),{"event_name":""}]}"#.utf8)
        let failures = Mutex<[String]>([])
        let port = server.server.port
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                let client = try RawHTTPClient(port: port)
                for round in 0..<20 {
                    // Singles (the prepared answer) alternate with batches (an answer built per
                    // request) on one keep-alive connection.
                    let single = round % 2 == 0
                    let response = try client.request(
                        "POST", single ? "/api/analytics/event" : "/api/analytics/batch",
                        headers: TestServer.sdkHeaders(), body: single ? Self.event : batch)
                    let expected =
                        single
                        ? #"{"accepted":1,"rejected":[],"warnings":[]}"#
                        : #"{"accepted":1,"rejected":[{"index":1,"code":"#
                    guard response.status == 200, response.text.hasPrefix(expected),
                        response.header("Content-Type") == "application/json",
                        response.header("Content-Length") == String(response.body.count)
                    else {
                        failures.withLock { $0.append("\(response.status) \(response.headers) \(response.text)") }
                        return
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(server.sink.records.count == 8 * 20)
        #expect(server.isServing())
    }
}
