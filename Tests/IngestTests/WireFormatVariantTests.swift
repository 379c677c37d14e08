import EventModel
import Foundation
import Testing

@testable import Ingest

// What the SDKs' HTTP and JSON libraries really put on the wire besides the doc's literals
// (docs/wire-format.md §1): header names in lower case, charset spellings, timestamp forms, escapes,
// members in any order, unknown and null members. Each is stored with the right envelope fields.
// The requests read from each SDK's source code, version by version: SDKSourceConformanceTests.swift
// (the Flutter plugin sends nothing from Dart, so no dart:io client is involved).
extension WireFormatTests {
    static let event = #""event_name":"purchase","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b""#

    static let variants: [Case] = [
        Case(
            label: "lower-case header names (an HTTP/2 hop), microsecond timestamp, X-SDK flutter/1.0.0",
            path: "/api/analytics/event",
            headers: [
                ("authorization", "Bearer \(TestServer.publishableKey)"), ("x-app-id", TestServer.app),
                ("content-type", "application/json; charset=utf-8"), ("x-sdk", "flutter/1.0.0"),
            ],
            body: #"{\#(event),"timestamp":"2026-06-01T10:20:30.123456Z","#
                + #""data":{"revenue":30.0,"currency":"EUR"}}"#,
            check: {
                $0.sdk == "flutter/1.0.0" && $0.clientTimestamp?.iso8601 == "2026-06-01T10:20:30.123Z"
                    && $0.time.iso8601 == "2026-06-01T10:20:30.123Z" && $0.clock == .ok
                    && $0.data == Array(#"{"revenue":30.0,"currency":"EUR"}"#.utf8)
            }),
        Case(
            label: "Android (Retrofit/Gson): charset=UTF-8, HTML-safe escapes, every attribution member dropped",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json; charset=UTF-8"), ("X-SDK", "android/2.2.0")],
            body: #"{"event_name":"a\u003db","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","#
                + #""device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","data":{"q":"x\u003d1\u0026y"},"#
                + #""attribution":{}}"#,
            check: {
                $0.name == "a=b" && $0.platform == .android && $0.data == Array(#"{"q":"x\u003d1\u0026y"}"#.utf8)
                    && $0.attribution == Attribution(installClickID: nil, openClickID: nil, openType: nil)
            }),
        Case(
            label: "iOS (JSONSerialization): escaped slashes, members in another order, IDFV in upper case",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json;charset=UTF-8"), ("X-SDK", "ios/1.0.2")],
            body: #"{"click_id":"clk\/9","data":{"url":"https:\/\/acme.godetour.link\/H\/a","#
                + #""revenue":29.989999999999998},"platform":"iOS","device_id":"3F2B8C1E-9A4D-4E2B-8F1A-2C3D4E5F6A7B","#
                + #""timestamp":"2026-06-01T10:20:30.123Z","event_name":"purchase"}"#,
            check: {
                $0.clickID == "clk/9" && $0.platform == .ios && $0.device == device && $0.name == "purchase"
                    && $0.data
                        == Array(#"{"url":"https:\/\/acme.godetour.link\/H\/a","revenue":29.989999999999998}"#.utf8)
            }),
        Case(
            label: "Java Instant: no fraction when the milliseconds are zero",
            path: "/api/analytics/retention",
            headers: auth + [("Content-Type", "application/json; charset=utf-8")],
            body: #"{"event_name":"app_open","timestamp":"2026-06-01T10:20:30Z","platform":"android","#
                + #""device_id":"d-1"}"#,
            check: {
                $0.kind == .retention && $0.clientTimestamp?.iso8601 == "2026-06-01T10:20:30.000Z" && $0.device == "d-1"
            }),
        Case(
            label: "a timestamp with a zone offset is stored in UTC",
            path: "/api/analytics/event",
            headers: auth,
            body: #"{\#(event),"timestamp":"2026-06-01T12:20:30.123+02:00"}"#,
            check: {
                $0.clientTimestamp?.iso8601 == "2026-06-01T10:20:30.123Z"
                    && $0.time.iso8601 == "2026-06-01T10:20:30.123Z"
            }),
        Case(
            label: "unknown members are ignored and null optional members are absent",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json")],
            body: #"{"app_build":"1.2.3",\#(event),"session":{"id":1},"timestamp":"2026-06-01T10:20:30.123Z","#
                + #""data":null,"metadata":null,"attribution":null,"click_id":null,"sdk":null,"user_id":null}"#,
            check: {
                $0.data == nil && $0.metadata == nil && $0.attribution == nil && $0.clickID == nil && $0.sdk == nil
                    && $0.name == "purchase"
            }),
        Case(
            label: "empty data and metadata objects are kept; an empty click_id is absent",
            path: "/api/analytics/event",
            headers: auth,
            body: #"{\#(event),"timestamp":"2026-06-01T10:20:30.123Z","data":{},"metadata":{},"click_id":""}"#,
            check: { $0.data == Array("{}".utf8) && $0.metadata == Array("{}".utf8) && $0.clickID == nil }),
        // RFC 9112 §5: whitespace after a field value is not part of it. libmicrohttpd 0.9.75 keeps
        // it, so until 2026-12-02 this was 403 key_not_allowed ("the key does not belong to app
        // app_acme "), and X-SDK was stored as "ios/1.0.2 \t" (a version of its own in reports).
        Case(
            label: "header values with trailing whitespace (an app id pasted with a blank) are read without it",
            path: "/api/analytics/event",
            headers: [
                ("Authorization", "Bearer \(TestServer.publishableKey) "), ("X-App-ID", TestServer.app + " "),
                ("Content-Type", "application/json\t"), ("X-SDK", "ios/1.0.2 \t"),
            ],
            body: #"{\#(event),"timestamp":"2026-06-01T10:20:30.123Z"}"#,
            check: { $0.sdk == "ios/1.0.2" && $0.name == "purchase" }),
        Case(
            label:
                "numbers in every RFC 8259 form and as strings are kept byte for byte; an escaped member name is read",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json; charset=utf-8")],
            body: #"{"event\u005fname":"purchase","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","#
                + #""timestamp":"2026-06-01T10:20:30.12+00:00","data":{"a":1e2,"b":-0,"c":29.990000000000002,"#
                + #""d":90071992547409931234,"e":"29.99","f":-1.5E-7,"g":0.0}}"#,
            check: {
                $0.name == "purchase" && $0.clientTimestamp?.iso8601 == "2026-06-01T10:20:30.120Z"
                    && $0.data
                        == Array(
                            #"{"a":1e2,"b":-0,"c":29.990000000000002,"d":90071992547409931234,"e":"29.99","f":-1.5E-7,"g":0.0}"#
                                .utf8)
            }),
        Case(
            label: "a Unicode event name, escaped as a surrogate pair, is stored as UTF-8",
            path: "/api/analytics/event",
            headers: auth,
            body: #"{"event_name":"caf\u00e9 \ud83d\ude00","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","#
                + #""device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#,
            check: { $0.name == "café 😀" }),
    ]

    @Test("what SDK HTTP and JSON libraries really send is accepted and stored with its fields", arguments: variants)
    func variant(_ testCase: Case) throws {
        try Self.expectStored(testCase)
    }

    /// OkHttp's GzipRequestInterceptor (the OkHttp recipe an app adds to its client) gzips the body
    /// with no length known in advance, so the request goes out chunked with `Content-Encoding: gzip`;
    /// an HTTP/1.0 client (no Host, no keep-alive) sends the plain body. Both are stored whole.
    @Test(
        "a chunked gzip body (OkHttp's gzip interceptor) and an HTTP/1.0 request are stored with their fields",
        arguments: ["chunked gzip", "HTTP/1.0"])
    func rawRequest(kind: String) throws {
        let server = try TestServer(useLog: true)
        let text =
            #"{"event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","#
            + #""device_id":"3F2B8C1E-9A4D-4E2B-8F1A-2C3D4E5F6A7B"}"#
        let body = Array(text.utf8)
        var head: String
        var payload: [UInt8]
        if kind == "HTTP/1.0" {
            head = "POST /api/analytics/retention HTTP/1.0\r\nContent-Length: \(body.count)\r\n"
            payload = body
        } else {
            head =
                "POST /api/analytics/retention HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                + "Content-Encoding: gzip\r\nAccept-Encoding: gzip\r\nUser-Agent: okhttp/4.12.0\r\n"
            let gzipped = Compression.gzip(body)
            let cut = gzipped.count / 2
            payload = []
            for chunk in [gzipped[..<cut], gzipped[cut...]] {
                payload += Array(String(chunk.count, radix: 16).utf8) + [13, 10] + chunk + [13, 10]
            }
            payload += Array("0\r\n\r\n".utf8)
        }
        head +=
            "Content-Type: application/json; charset=utf-8\r\nAuthorization: Bearer \(TestServer.publishableKey)\r\n"
        head += "X-App-ID: \(TestServer.app)\r\nX-SDK: android/1.1.0\r\n\r\n"
        let client = try server.client()
        client.send(Array(head.utf8) + payload)
        let response = try client.readResponse()
        #expect(response.status == 200, "\(response.text)")
        let lines = try server.storedLines()
        try #require(lines.count == 1)
        let envelope = try Envelope(decoding: Array(lines[0].utf8))
        #expect(envelope.kind == .retention && envelope.name == "app_open" && envelope.platform == .android)
        #expect(envelope.device == Self.device && envelope.sdk == "android/1.1.0")
        #expect(envelope.clientTimestamp?.iso8601 == "2026-06-01T10:20:30.123Z")
    }

    @Test("a string cut inside an emoji (a lone surrogate escape, as JSON.stringify writes it) is kept as U+FFFD")
    func loneSurrogate() throws {
        let server = try TestServer(useLog: true)
        // React Native: `title.slice(0, 12)` cut "😀" in half, and JSON.stringify escaped the half.
        let body =
            #"{"event_name":"share \ud83d","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","#
            + #""device_id":"d-1","data":{"title":"Summer sale \ud83d","ok":"\ud83d\ude00"},"#
            + #""metadata":{"\ude00k":1}}"#
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["accepted"] as? Int == 1)
        let warnings = response.json["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.contains("lone UTF-16 surrogate") }, "\(warnings)")
        let lines = try server.storedLines()
        try #require(lines.count == 1)
        // The stored line is Unicode (jsonb takes it): the half is U+FFFD, the whole emoji is kept.
        #expect(lines[0].contains(#""data":{"title":"Summer sale \ufffd","ok":"\ud83d\ude00"}"#), "\(lines[0])")
        #expect(lines[0].contains(#""metadata":{"\ufffdk":1}"#), "\(lines[0])")
        #expect(!lines[0].lowercased().contains(#"\ud83d""#) && !lines[0].contains(#"\ude00k"#))
        let envelope = try Envelope(decoding: Array(lines[0].utf8))
        #expect(envelope.name == "share \u{FFFD}")
    }

    @Test("a link body with both the batch form and clicks is refused whole and dead-lettered, not half read")
    func linkBothForms() throws {
        let server = try TestServer(useLog: true)
        let body =
            #"{"batch":[{"type":"match","click_id":"clk_1","timestamp":"2026-06-01T10:25:00Z","#
            + #""method":"deterministic"}],"clicks":[{"click_id":"clk_2","url":"https://acme.godetour.link/H/a","#
            + #""timestamp":"2026-06-01T10:20:30Z","kind":"web"}]}"#
        let response = try server.client().request(
            "POST", "/api/link/events", headers: TestServer.sdkHeaders(key: TestServer.secretKey),
            body: Array(body.utf8))
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_batch")
        #expect(try server.storedLines().isEmpty)
        let deadLetters = try server.deadLetterLines()
        #expect(deadLetters.count == 1 && deadLetters[0].contains("clk_2"))
    }

    @Test("a batch body that gives \"batch\" twice is refused whole and dead-lettered with both lists, not half read")
    func batchGivenTwice() throws {
        let server = try TestServer(useLog: true)
        let event = { (name: String) in
            #"{"event_name":"\#(name)","timestamp":"2026-06-01T10:20:30Z","platform":"ios","device_id":"d"}"#
        }
        let body = #"{"batch":[\#(event("first_list"))],"batch":[\#(event("second_list"))]}"#
        let client = try server.client()
        let response = try client.request(
            "POST", "/api/analytics/batch", headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_batch")
        #expect(response.text.contains(#"the member \"batch\" appears more than once"#), "\(response.text)")
        #expect(try server.storedLines().isEmpty)
        let deadLetters = try server.deadLetterLines()
        #expect(
            deadLetters.count == 1 && deadLetters[0].contains("first_list") && deadLetters[0].contains("second_list"))
        // The server still serves.
        let good = #"{"batch":[\#(event("after"))]}"#
        #expect(
            try client.request("POST", "/api/analytics/batch", headers: TestServer.sdkHeaders(), body: Array(good.utf8))
                .status == 200)
    }
}
