import Dispatch
import Foundation
import Locking
import Synchronization
import Testing

@testable import Ingest

@Suite("Report API routes")
struct ReportAPITests {
    static let secret = [("Authorization", "Bearer \(TestServer.secretKey)"), ("X-App-ID", TestServer.app)]

    @Test("a secret key gets the report of its own app, with the decoded query parameters")
    func secretKeyReadsReport() throws {
        let provider = EchoReportProvider()
        let server = try TestServer(reportProvider: provider)
        let client = try server.client()
        for kind in ["links", "funnel", "retention", "attribution"] {
            let response = try client.request(
                "GET", "/api/reports/\(kind)?from=2026-06-01&to=2026-06-30&format=csv", headers: Self.secret)
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("Cache-Control") == "no-store")
            #expect(
                response.json["parameters"] as? [String: String] == [
                    "app": TestServer.app, "from": "2026-06-01", "to": "2026-06-30", "format": "csv",
                ])
            #expect(response.json["report"] as? String == kind)
        }
        // Percent-decoding, and an `app` parameter equal to X-App-ID is accepted.
        let decoded = try client.request(
            "GET", "/api/reports/links?app=app_acme&from=2026%2D06%2D01", headers: Self.secret)
        #expect(decoded.status == 200)
        #expect((decoded.json["parameters"] as? [String: String])?["from"] == "2026-06-01")
        // The longest link path ingest stores (1,024 bytes) can be asked for, whole.
        let path = "/" + String(repeating: "\u{e9}", count: 511) + "x"
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let long = try client.request("GET", "/api/reports/links?path=" + encoded, headers: Self.secret)
        #expect(long.status == 200)
        #expect((long.json["parameters"] as? [String: String])?["path"] == path)
        let longer = try client.request("GET", "/api/reports/links?path=" + encoded + "y", headers: Self.secret)
        #expect(longer.status == 400)
        #expect(provider.requests.withLock { $0.count } == 6)
    }

    @Test(
        "keys that may not read this app's reports are refused before any report runs",
        arguments: [
            (
                [("Authorization", "Bearer \(TestServer.publishableKey)"), ("X-App-ID", TestServer.app)], "",
                403, "key_not_allowed"
            ),
            (
                [("Authorization", "Bearer \(TestServer.otherSecretKey)"), ("X-App-ID", TestServer.app)], "",
                403, "key_not_allowed"
            ),
            (
                [("Authorization", "Bearer \(TestServer.otherSecretKey)"), ("X-App-ID", TestServer.otherApp)],
                "?app=app_acme", 403, "key_not_allowed"
            ),
            ([("X-App-ID", TestServer.app)], "", 401, "missing_key"),
            ([("Authorization", "Bearer sk_nope"), ("X-App-ID", TestServer.app)], "", 401, "invalid_key"),
            ([("Authorization", "Bearer \(TestServer.secretKey)")], "", 401, "missing_app_id"),
        ])
    func refusedKeys(headers: [(String, String)], query: String, status: Int, code: String) throws {
        let provider = EchoReportProvider()
        let server = try TestServer(reportProvider: provider)
        let response = try server.client().request("GET", "/api/reports/links" + query, headers: headers)
        #expect(response.status == status)
        #expect(response.errorCode == code)
        #expect(provider.requests.withLock { $0.isEmpty })
    }

    @Test(
        "malformed query strings are 400 invalid_parameter",
        arguments: [
            (1...17).map { "p\($0)=1" }.joined(separator: "&"),
            "from=" + String(repeating: "9", count: 1025),
            "from=2026-06-01&from=2026-06-02",
            // A NUL byte: as a C string these read as "2026-06-01", "/a" and "x" (until 2026-12-05).
            "from=2026-06-01%00garbage", "path=%2Fa%00b", "x%00y=1",
            // Not UTF-8 once decoded: repaired to U+FFFD they named another link (until 2026-12-05).
            "path=/%FF%FE", "path=/%C3%28", "path=/%ED%A0%80", "p%FF=1",
            // A part with a value but no name.
            "=2026-06-01",
        ])
    func malformedQuery(query: String) throws {
        let provider = EchoReportProvider()
        let server = try TestServer(reportProvider: provider)
        let response = try server.client().request("GET", "/api/reports/links?" + query, headers: Self.secret)
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_parameter")
        #expect(provider.requests.withLock { $0.isEmpty })
    }

    @Test("empty parts of a query string are skipped, leading, doubled or trailing, as URL parsers skip them")
    func emptyQueryParts() throws {
        let provider = EchoReportProvider()
        let server = try TestServer(reportProvider: provider)
        for query in ["&from=2026-06-01", "from=2026-06-01&&to=2026-06-02&", "&&", "from=2026-06-01&"] {
            let response = try server.client().request("GET", "/api/reports/links?" + query, headers: Self.secret)
            #expect(response.status == 200, "\(query): until 2026-12-05 a leading or doubled & was refused")
        }
        let last = provider.requests.withLock { $0.last?.parameters }
        #expect(last == ["from": "2026-06-01", "app": TestServer.app])
    }

    @Test("a report refusal keeps its status and code, in the API's one error shape")
    func providerFailure() throws {
        let provider = EchoReportProvider(
            answer: .failure(status: 503, code: "database_unavailable", message: "the report database is down"))
        let server = try TestServer(reportProvider: provider)
        let response = try server.client().request("GET", "/api/reports/funnel", headers: Self.secret)
        #expect(response.status == 503)
        #expect(response.errorCode == "database_unavailable")
        #expect(response.header("Retry-After") == "5")
    }

    @Test("a streamed report body is sent chunked as it is made, whole, and released once sent")
    func streamedBody() throws {
        let released = DispatchSemaphore(value: 0)
        let total = 3_000_017
        let provider = EchoReportProvider {
            .streamed(contentType: "application/json", body: PatternStream(total: total) { released.signal() })
        }
        let server = try TestServer(reportProvider: provider) { $0.threads = 1 }
        let client = try server.client()
        let response = try client.request("GET", "/api/reports/links", headers: Self.secret)
        #expect(response.status == 200)
        #expect(response.header("Transfer-Encoding") == "chunked")
        #expect(response.header("Content-Length") == nil)
        #expect(response.header("Cache-Control") == "no-store")
        #expect(response.body.count == total)
        #expect(response.body == (0..<total).map(PatternStream.byte))
        #expect(response.chunks > 1)
        #expect(released.wait(timeout: .now() + 10) == .success, "the stream was never released")
        // The same keep-alive connection goes on serving.
        let event =
            #"{"event_name":"open","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
        let ingest = try client.request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Array(event.utf8))
        #expect(ingest.status == 200)
    }

    @Test("HEAD of a streamed report: its length, no body, and the connection's next answer intact")
    func streamedBodyHead() throws {
        let provider = EchoReportProvider {
            .streamed(contentType: "application/json", body: PatternStream(total: 100_003) {})
        }
        let server = try TestServer(reportProvider: provider)
        let client = try server.client()
        let head = try client.request("HEAD", "/api/reports/links", headers: Self.secret)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "100003")
        #expect(head.body.isEmpty)
        // libmicrohttpd ends a chunked answer to HEAD with a last-chunk line; had it been sent, this
        // answer would start with it.
        let next = try client.request("GET", "/api/reports/links", headers: Self.secret)
        #expect(next.status == 200)
        #expect(next.body == (0..<100_003).map(PatternStream.byte))
    }

    @Test("a client that leaves in the middle of a streamed report: the stream is released, the server serves on")
    func streamedBodyAbandoned() throws {
        let released = DispatchSemaphore(value: 0)
        let provider = EchoReportProvider {
            .streamed(contentType: "application/json", body: PatternStream(total: 200_000_000) { released.signal() })
        }
        let server = try TestServer(reportProvider: provider) { $0.threads = 1 }
        do {
            let client = try server.client()
            client.send(Self.rawRequest("links"))
            #expect(provider.arrived.wait(timeout: .now() + 10) == .success)
            _ = client.isClosedByPeer()  // reads one byte of the answer, then the client closes
        }
        #expect(released.wait(timeout: .now() + 20) == .success, "the abandoned stream was never released")
        #expect(server.isServing())
    }

    @Test("a body made while it is sent: its first bytes leave before the rest is made, the reader waits, all arrives")
    func producedBody() throws {
        let body = GatedBody(first: Array(repeating: UInt8(ascii: "a"), count: 70_000), rest: Array("bc".utf8))
        let provider = EchoReportProvider { .streamed(contentType: "application/json", body: body) }
        let server = try TestServer(reportProvider: provider) { $0.threads = 1 }
        let client = try server.client()
        client.send(Self.rawRequest("links"))
        // The worker made the first piece and waits at the gate: the event loop sent it meanwhile,
        // then found nothing ready and suspended the connection.
        #expect(body.firstSent.wait(timeout: .now() + 10) == .success, "the first piece was not sent before the rest")
        #expect(server.isServing(), "a suspended stream holds no event loop")
        body.gate.signal()
        let response = try client.readResponse()
        #expect(response.status == 200 && response.header("Transfer-Encoding") == "chunked")
        #expect(response.body == body.first + body.rest)
        #expect(body.suspensions.load(ordering: .relaxed) >= 1)
        #expect(body.cancelled.wait(timeout: .now() + 10) == .success, "the body was not told the response is over")
        // HEAD: made whole first (on the worker, the gate already open), answered with its length.
        let headBody = GatedBody(first: body.first, rest: body.rest)
        headBody.gate.signal()
        let headServer = try TestServer(
            reportProvider: EchoReportProvider { .streamed(contentType: "application/json", body: headBody) })
        let head = try headServer.client().request("HEAD", "/api/reports/links", headers: Self.secret)
        #expect(head.status == 200 && head.header("Content-Length") == "70002" && head.body.isEmpty)
        #expect(headBody.suspensions.load(ordering: .relaxed) == 0)
    }

    @Test("a body made while it is sent, whose client leaves: the worker stops making it, the server serves on")
    func producedBodyAbandoned() throws {
        let body = GatedBody(first: Array(repeating: UInt8(ascii: "a"), count: 70_000), rest: Array("bc".utf8))
        let provider = EchoReportProvider { .streamed(contentType: "application/json", body: body) }
        let server = try TestServer(reportProvider: provider) { $0.threads = 1 }
        do {
            let client = try server.client()
            client.send(Self.rawRequest("links"))
            #expect(body.firstSent.wait(timeout: .now() + 10) == .success)
            _ = client.isClosedByPeer()  // reads one byte of the answer, then the client closes
        }
        // Suspended, libmicrohttpd cannot see the client leave: the next piece resumes the
        // connection, whose send fails, and the response ends.
        body.gate.signal()
        #expect(body.cancelled.wait(timeout: .now() + 20) == .success, "the abandoned body was never cancelled")
        #expect(server.isServing())
    }

    @Test(
        "a client that leaves before its report is answered: the body is cancelled, not made whole, and the request counted"
    )
    func clientGoneBeforeTheAnswer() throws {
        let body = GatedBody(first: Array(repeating: UInt8(ascii: "a"), count: 70_000), rest: Array("bc".utf8))
        let provider = EchoReportProvider(isGated: true) { .streamed(contentType: "application/json", body: body) }
        let server = try TestServer(reportProvider: provider) { $0.threads = 1 }
        do {
            let client = try server.client()
            client.send(Self.rawRequest("links"))
            #expect(provider.arrived.wait(timeout: .now() + 10) == .success)
        }  // the client closes while the report is still being queried (a dashboard's timeout)
        // The answer resumes a connection libmicrohttpd then finds closed, before any response is
        // made of it. Until 2026-12-05 nothing cancelled the body there: a worker made the whole
        // report (32 MB of JSON for a 30-day per-link report at 1,000 links) for nobody, and held it.
        provider.gate.signal()
        #expect(body.cancelled.wait(timeout: .now() + 20) == .success, "the body of a gone client was never cancelled")
        body.gate.signal()  // the test double's second piece: its worker is free at once
        // Counted as the answer it would have had (until then not at all).
        var counted = false
        for _ in 0..<1200 where !counted {  // at most 60 s
            let text = try server.client().request("GET", "/metrics").text
            counted = text.contains(#"ingest_requests_total{route="reports_links",status="200"} 1"#)
            if !counted { usleep(50_000) }
        }
        #expect(counted)
        #expect(server.isServing())
    }

    @Test("without a report provider the routes answer 503 reports_unavailable (after auth)")
    func noProvider() throws {
        let server = try TestServer()
        let client = try server.client()
        let response = try client.request("GET", "/api/reports/links", headers: Self.secret)
        #expect(response.status == 503)
        #expect(response.errorCode == "reports_unavailable")
        let unauthenticated = try client.request("GET", "/api/reports/links")
        #expect(unauthenticated.status == 401)
        let post = try client.request("POST", "/api/reports/links", headers: Self.secret)
        #expect(post.status == 405)
    }

    @Test("ingest and health checks are served while a report holds the only event-loop thread's request")
    func reportsRunOffTheEventLoop() throws {
        let provider = EchoReportProvider(isGated: true)
        let server = try TestServer(reportProvider: provider) { $0.threads = 1 }
        let reportClient = try server.client()
        reportClient.send(Self.rawRequest("links"))
        #expect(provider.arrived.wait(timeout: .now() + 10) == .success)
        // The report is blocked inside the provider; the single event loop still answers.
        #expect(server.isServing())
        let event =
            #"{"event_name":"open","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
        let ingest = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Array(event.utf8))
        #expect(ingest.status == 200)
        provider.gate.signal()
        let report = try reportClient.readResponse()
        #expect(report.status == 200)
        #expect(report.json["report"] as? String == "links")
    }

    @Test("a full report queue answers 503 reports_busy with Retry-After, then recovers")
    func busy() throws {
        let provider = EchoReportProvider(isGated: true)
        let server = try TestServer(reportProvider: provider) {
            $0.reportThreads = 1
            $0.reportQueueDepth = 0
        }
        let running = try server.client()
        running.send(Self.rawRequest("retention"))
        #expect(provider.arrived.wait(timeout: .now() + 10) == .success)
        let busy = try server.client().request("GET", "/api/reports/retention", headers: Self.secret)
        #expect(busy.status == 503)
        #expect(busy.errorCode == "reports_busy")
        #expect(busy.header("Retry-After") == "1")
        provider.gate.signal()
        #expect(try running.readResponse().status == 200)
        provider.gate.signal()
        #expect(try server.client().request("GET", "/api/reports/retention", headers: Self.secret).status == 200)
        #expect(provider.requests.withLock { $0.count } == 2)
    }

    static func rawRequest(_ kind: String) -> [UInt8] {
        Array(
            ("GET /api/reports/\(kind) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(TestServer.secretKey)\r\n"
                + "X-App-ID: \(TestServer.app)\r\n\r\n").utf8)
    }

    @Test("report requests are counted by route, status and error code, with a latency histogram")
    func metrics() throws {
        let server = try TestServer(reportProvider: EchoReportProvider())
        let client = try server.client()
        _ = try client.request("GET", "/api/reports/links", headers: Self.secret)
        _ = try client.request("GET", "/api/reports/links")
        let text = try client.request("GET", "/metrics").text
        #expect(text.contains(#"ingest_requests_total{route="reports_links",status="200"} 1"#))
        #expect(text.contains(#"ingest_requests_total{code="missing_key",route="reports_links",status="401"} 1"#))
        #expect(text.contains(#"ingest_request_duration_seconds_count{route="reports_links"} 2"#))
    }

    @Test(
        "a report request with a body over 4 KiB is 413 body_too_large, declared or chunked, and nothing runs",
        arguments: [false, true])
    func bodyTooLarge(chunked: Bool) throws {
        let provider = EchoReportProvider()
        let server = try TestServer(reportProvider: provider)
        let client = try server.client()
        // 5,000 bytes arrive in one read: over the 4 KiB limit, under twice it. Until 2026-11-30 the
        // connection was closed without an answer (a declared length was not checked from the head).
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 5000)
        var head = "GET /api/reports/links HTTP/1.1\r\nHost: x\r\n"
        for (name, value) in Self.secret { head += "\(name): \(value)\r\n" }
        if chunked {
            head += "Transfer-Encoding: chunked\r\n\r\n"
            client.send(Array(head.utf8) + Array("1388\r\n".utf8) + body + Array("\r\n0\r\n\r\n".utf8))
        } else {
            client.send(Array((head + "Content-Length: 5000\r\n\r\n").utf8) + body)
        }
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.errorCode == "body_too_large")
        #expect(provider.requests.withLock { $0.count } == 0)
        #expect(server.isServing())
    }

    @Test("a report waiting in the queue at shutdown is answered 503 shutting_down")
    func shutdownAnswersQueued() throws {
        let provider = EchoReportProvider(isGated: true)
        let server = try TestServer(reportProvider: provider) { $0.reportThreads = 1 }
        let request = Self.rawRequest("funnel")
        let running = try server.client()
        running.send(request)
        #expect(provider.arrived.wait(timeout: .now() + 10) == .success)
        let waiting = try server.client()
        waiting.send(request)
        // Bounded wait until the second request is queued behind the running one.
        for _ in 0..<2000 where server.server.waitingReports == 0 { usleep(5000) }
        #expect(server.server.waitingReports == 1)
        let stopped = DispatchSemaphore(value: 0)
        let box = UncheckedBox(server)
        Thread {
            box.value.server.shutdown()
            stopped.signal()
        }.start()
        #expect(try waiting.readResponse().status == 503)
        // While the running report holds the shutdown, new connections are refused (a load balancer
        // retries those elsewhere), not accepted and answered 503 shutting_down as until 2026-12-05.
        #expect(throws: (any Error).self, "a connection was accepted during the shutdown") {
            try server.client()
        }
        provider.gate.signal()
        #expect(try running.readResponse().status == 200)
        #expect(stopped.wait(timeout: .now() + 20) == .success)
    }

    @Test("shutdown while a report's body is being made: the body is finished and sent whole, then the server stops")
    func shutdownFinishesProducedBody() throws {
        let body = GatedBody(first: Array(repeating: UInt8(ascii: "a"), count: 70_000), rest: Array("bc".utf8))
        let server = try TestServer(
            reportProvider: EchoReportProvider { .streamed(contentType: "application/json", body: body) })
        let client = try server.client()
        client.send(Self.rawRequest("links"))
        #expect(body.firstSent.wait(timeout: .now() + 10) == .success)
        // The connection is suspended on the body: the daemon must not stop under it.
        let stopped = DispatchSemaphore(value: 0)
        let box = UncheckedBox(server)
        Thread {
            box.value.server.shutdown()
            stopped.signal()
        }.start()
        #expect(stopped.wait(timeout: .now() + 0.3) == .timedOut, "stopped with a body half made")
        body.gate.signal()
        let response = try client.readResponse()
        #expect(response.status == 200 && response.body == body.first + body.rest)
        #expect(stopped.wait(timeout: .now() + 20) == .success)
    }
}
