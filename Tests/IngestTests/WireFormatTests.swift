import EventModel
import Foundation
import Testing

@testable import Ingest

/// Every literal body of the wire-format doc, sent as the SDKs send it, is accepted, made durable
/// in a real event log and stored with the right fields.
@Suite("Wire format: every SDK literal is accepted and stored")
struct WireFormatTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var path: String
        var headers: [(String, String)]
        var body: String
        var check: @Sendable (Envelope) -> Bool
        var testDescription: String { label }
    }

    static let device = "3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"
    static let auth: [(String, String)] = [
        ("Authorization", "Bearer \(TestServer.publishableKey)"), ("X-App-ID", TestServer.app),
    ]

    static let cases: [Case] = [
        Case(
            label: "current SDK purchase with X-SDK",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json"), ("X-SDK", "ios/1.0.2")],
            body:
                #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"USD"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#,
            check: {
                $0.kind == .event && $0.name == "purchase" && $0.platform == .ios && $0.sdk == "ios/1.0.2"
                    && $0.device == device && $0.clientTimestamp?.iso8601 == "2026-06-01T10:20:30.123Z"
                    && $0.data == Array(#"{"revenue":29.99,"currency":"USD"}"#.utf8) && $0.app == TestServer.app
            }),
        Case(
            label: "universal-link open from Android with charset",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json; charset=utf-8"), ("X-SDK", "android/2.1.0")],
            body:
                #"{"event_name":"opened_via_universal_link","data":{"url":"https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"android","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#,
            check: { $0.name == "opened_via_universal_link" && $0.platform == .android && $0.sdk == "android/2.1.0" }),
        Case(
            label: "short-lived sdk body field, no X-SDK",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json")],
            body:
                #"{"event_name":"purchase","data":{"revenue":29.99},"timestamp":"2026-04-02T15:51:10.000Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","sdk":"react-native"}"#,
            check: { $0.sdk == "react-native" && $0.clientTimestamp?.iso8601 == "2026-04-02T15:51:10.000Z" }),
        Case(
            label: "newest SDK with attribution",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json"), ("X-SDK", "react-native/3.0.0")],
            body:
                #"{"event_name":"add_to_cart","data":{"sku":"abc"},"timestamp":"2026-07-20T08:00:00.000Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","attribution":{"install_click_id":"clk_123","open_click_id":null,"open_type":"organic"}}"#,
            check: {
                $0.attribution == Attribution(installClickID: "clk_123", openClickID: nil, openType: "organic")
            }),
        Case(
            label: "Android attribution with null members dropped, upper-case device id",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json; charset=utf-8"), ("X-SDK", "android/2.2.0")],
            body:
                #"{"event_name":"add_to_cart","data":{"sku":"abc"},"timestamp":"2026-07-20T08:00:00.000Z","platform":"android","device_id":"3F2B8C1E-9A4D-4E2B-8F1A-2C3D4E5F6A7B","attribution":{"open_type":"organic"}}"#,
            check: {
                $0.attribution == Attribution(installClickID: nil, openClickID: nil, openType: "organic")
                    && $0.device == device
            }),
        Case(
            label: "click_id and metadata",
            path: "/api/analytics/event",
            headers: auth + [("Content-Type", "application/json"), ("X-SDK", "flutter/1.0.0")],
            body:
                #"{"event_name":"sign_up","timestamp":"2026-07-20T08:00:00.000Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","click_id":"clk_9","metadata":{"source":"ad"}}"#,
            check: { $0.clickID == "clk_9" && $0.metadata == Array(#"{"source":"ad"}"#.utf8) }),
        Case(
            label: "retention app_open without Content-Type",
            path: "/api/analytics/retention",
            headers: auth,
            body:
                #"{"event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#,
            check: { $0.kind == .retention && $0.name == "app_open" && $0.platform == .android }),
    ]

    @Test("SDK literal is accepted with 200 and stored durably with its fields", arguments: cases)
    func literal(_ testCase: Case) throws {
        try Self.expectStored(testCase)
    }

    /// Posts the case to a server with a real event log and checks the one envelope it stored.
    static func expectStored(_ testCase: Case) throws {
        let server = try TestServer(useLog: true)
        let response = try server.client().request(
            "POST", testCase.path, headers: testCase.headers, body: Array(testCase.body.utf8))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["accepted"] as? Int == 1)
        #expect((response.json["rejected"] as? [Any])?.isEmpty == true)
        let lines = try server.storedLines()
        try #require(lines.count == 1)
        let envelope = try Envelope(decoding: Array(lines[0].utf8))
        #expect(testCase.check(envelope), "\(lines[0])")
        #expect(envelope.app == TestServer.app)
    }

    @Test("a repeated SDK request gets the same event id")
    func deterministicID() throws {
        let server = try TestServer(useLog: true)
        let body = Array(Self.cases[0].body.utf8)
        for _ in 0..<2 {
            #expect(
                try server.client().request("POST", "/api/analytics/event", headers: Self.cases[0].headers, body: body)
                    .status == 200)
        }
        let ids = try server.storedLines().map { try Envelope(decoding: Array($0.utf8)).id }
        #expect(ids.count == 2)
        #expect(ids[0] == ids[1])
    }

    @Test("a batch with valid and invalid events stores the valid ones and reports the others")
    func mixedBatch() throws {
        let server = try TestServer(useLog: true)
        let body = #"""
            {"sent_at":"2026-06-01T10:20:31.000Z","batch":[
              {"event_name":"purchase","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","event_id":"e-1"},
              {"event_name":"purchase","timestamp":"yesterday","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"},
              {"type":"retention","event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","message_id":"m-2"},
              {"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}
            ]}
            """#
        let response = try server.client().request(
            "POST", "/api/analytics/batch", headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["accepted"] as? Int == 2)
        let rejected = response.json["rejected"] as? [[String: Any]] ?? []
        #expect(rejected.map { $0["index"] as? Int } == [1, 3])
        #expect(rejected.allSatisfy { ($0["code"] as? String)?.isEmpty == false })
        let envelopes = try server.storedLines().map { try Envelope(decoding: Array($0.utf8)) }
        #expect(envelopes.map(\.id) == ["e-1", "m-2"])
        #expect(envelopes.map(\.kind) == [.event, .retention])
        #expect(envelopes[0].sentAt?.iso8601 == "2026-06-01T10:20:31.000Z")
        let deadLetters = try server.deadLetterLines()
        #expect(deadLetters.count == 2)
        #expect(deadLetters[0].contains(#""index":1"#) && deadLetters[0].contains("yesterday"))
        #expect(deadLetters[1].contains(#""index":3"#))
    }

    @Test("a pretty-printed event with line breaks inside data is stored as one line")
    func prettyPrintedAccepted() throws {
        let server = try TestServer(useLog: true)
        let body =
            "{\n \"event_name\": \"purchase\",\n \"data\": {\n  \"revenue\": 1,\r\n  \"currency\": \"USD\"\n },\n"
            + " \"timestamp\": \"2026-06-01T10:20:30.123Z\", \"platform\": \"ios\",\n"
            + " \"device_id\": \"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b\"\n}\n"
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 200, "\(response.text)")
        let lines = try server.storedLines()
        try #require(lines.count == 1)
        let envelope = try Envelope(decoding: Array(lines[0].utf8))
        #expect(envelope.name == "purchase")
    }

    @Test("a rejected pretty-printed event is dead-lettered as one readable line in the real log")
    func prettyPrintedRejection() throws {
        let server = try TestServer(useLog: true)
        let body = "{\n  \"event_name\": \"purchase\",\r\n  \"timestamp\": \"not a time\",\n  \"platform\": \"ios\"\n}"
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 400)
        let lines = try server.deadLetterLines()
        try #require(lines.count == 1)
        let record = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        #expect((record?["raw"] as? [String: Any])?["timestamp"] as? String == "not a time")
        #expect(record?["app"] as? String == TestServer.app)
        #expect(record?["route"] as? String == "event")
        #expect(try server.storedLines().isEmpty)
    }

    @Test("a batch with no valid event is 400 with the same answer shape")
    func allInvalidBatch() throws {
        let server = try TestServer()
        let body = #"{"batch":[{"event_name":"x"}]}"#
        let response = try server.client().request(
            "POST", "/api/analytics/batch", headers: TestServer.sdkHeaders(), body: Array(body.utf8))
        #expect(response.status == 400)
        #expect(response.json["accepted"] as? Int == 0)
        #expect((response.json["rejected"] as? [Any])?.count == 1)
        #expect(server.sink.records.isEmpty)
        #expect(server.deadLetters.records.count == 1)
    }

    static let linkBody = #"""
        {"clicks":[{"click_id":"clk_1","url":"https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","kind":"web","user_agent":"Mozilla/5.0","ip":"203.0.113.9"}],
         "matches":[{"click_id":"clk_1","timestamp":"2026-06-01T10:25:00.000Z","method":"probabilistic","score":900}]}
        """#

    @Test("the link service posts clicks and matches with the secret key")
    func linkEvents() throws {
        let server = try TestServer(useLog: true)
        let response = try server.client().request(
            "POST", "/api/link/events", headers: TestServer.sdkHeaders(key: TestServer.secretKey),
            body: Array(Self.linkBody.utf8))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["accepted"] as? Int == 2)
        let envelopes = try server.storedLines().map { try Envelope(decoding: Array($0.utf8)) }
        #expect(envelopes.map(\.kind) == [.click, .match])
        #expect(envelopes[0].path == "/articles/2")
        #expect(envelopes[0].clickKind == .web)
        #expect(envelopes[1].method == .probabilistic)
    }

    @Test("the link service may leave out X-App-ID: its secret key names the app")
    func linkEventsWithoutAppID() throws {
        let server = try TestServer(useLog: true)
        let secret = [("Authorization", "Bearer \(TestServer.secretKey)"), ("Content-Type", "application/json")]
        let response = try server.client().request(
            "POST", "/api/link/events", headers: secret, body: Array(Self.linkBody.utf8))
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json["accepted"] as? Int == 2)
        let envelopes = try server.storedLines().map { try Envelope(decoding: Array($0.utf8)) }
        #expect(envelopes.map(\.app) == [TestServer.app, TestServer.app])
        // Without the header a publishable key is still refused there, and an unknown key is unknown.
        let publishable = [
            ("Authorization", "Bearer \(TestServer.publishableKey)"), ("Content-Type", "application/json"),
        ]
        let refused = try server.client().request(
            "POST", "/api/link/events", headers: publishable, body: Array(Self.linkBody.utf8))
        #expect(refused.status == 403)
        #expect(refused.errorCode == "key_not_allowed")
        let unknown = [("Authorization", "Bearer sk_nobody"), ("Content-Type", "application/json")]
        let unknownAnswer = try server.client().request(
            "POST", "/api/link/events", headers: unknown, body: Array(Self.linkBody.utf8))
        #expect(unknownAnswer.status == 401)
        #expect(unknownAnswer.errorCode == "invalid_key")
        // The SDK routes still need the header.
        let event = try server.client().request(
            "POST", "/api/analytics/event", headers: secret, body: Array(Self.cases[0].body.utf8))
        #expect(event.status == 401)
        #expect(event.errorCode == "missing_app_id")
        #expect(try server.storedLines().count == 2)
    }

    @Test("the link route refuses a publishable key even with a valid body")
    func linkWithPublishableKey() throws {
        let server = try TestServer()
        let response = try server.client().request(
            "POST", "/api/link/events", headers: TestServer.sdkHeaders(), body: Array(Self.linkBody.utf8))
        #expect(response.status == 403)
        #expect(response.errorCode == "key_not_allowed")
        #expect(server.sink.records.isEmpty)
    }

    @Test("a secret key also works on analytics routes")
    func secretKeyOnAnalytics() throws {
        let server = try TestServer()
        let response = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(key: TestServer.secretKey),
            body: Array(Self.cases[0].body.utf8))
        #expect(response.status == 200)
        #expect(server.sink.records.count == 1)
    }
}
