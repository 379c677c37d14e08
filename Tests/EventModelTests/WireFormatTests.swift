import Testing

@testable import EventModel

/// Every literal of docs/wire-format.md §1, copied exactly, must be accepted with the right fields.
@Suite struct WireFormatTests {
    static let received = Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!

    struct Fixture: Sendable, CustomStringConvertible {
        var body: String
        var kind: EventKind
        var header: String?
        var name: String
        var platform: Platform
        var clientTimestamp: String
        var sdk: String?
        var data: String?
        var attribution: Attribution?
        var description: String { "\(name) \(header ?? "no X-SDK")" }
    }

    static let purchase =
        #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"USD"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
    static let universalLink =
        #"{"event_name":"opened_via_universal_link","data":{"url":"https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"android","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
    static let bodySDK =
        #"{"event_name":"purchase","data":{"revenue":29.99},"timestamp":"2026-04-02T15:51:10.000Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","sdk":"react-native"}"#
    static let attributed =
        #"{"event_name":"add_to_cart","data":{"sku":"abc"},"timestamp":"2026-07-20T08:00:00.000Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","attribution":{"install_click_id":"clk_123","open_click_id":null,"open_type":"organic"}}"#
    static let retention =
        #"{"event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
    static let androidAttribution =
        #"{"event_name":"add_to_cart","data":{"sku":"abc"},"timestamp":"2026-07-20T08:00:00.000Z","platform":"android","device_id":"3F2B8C1E-9A4D-4E2B-8F1A-2C3D4E5F6A7B","attribution":{"open_type":"organic"}}"#
    static let clickAndMetadata =
        #"{"event_name":"share","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","click_id":"clk_9","metadata":{"screen":"home","n":[1,2]}}"#

    static let fixtures: [Fixture] = {
        var list: [Fixture] = []
        for header in ["ios/1.0.2", "android/2.1.0", "react-native/1.4.0", "flutter/0.9.1", nil] as [String?] {
            list.append(
                Fixture(
                    body: purchase, kind: .event, header: header, name: "purchase", platform: .ios,
                    clientTimestamp: "2026-06-01T10:20:30.123Z", sdk: header,
                    data: #"{"revenue":29.99,"currency":"USD"}"#))
            list.append(
                Fixture(
                    body: universalLink, kind: .event, header: header, name: "opened_via_universal_link",
                    platform: .android,
                    clientTimestamp: "2026-06-01T10:20:30.123Z", sdk: header,
                    data: #"{"url":"https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news"}"#))
            list.append(
                Fixture(
                    body: attributed, kind: .event, header: header, name: "add_to_cart", platform: .ios,
                    clientTimestamp: "2026-07-20T08:00:00.000Z", sdk: header, data: #"{"sku":"abc"}"#,
                    attribution: Attribution(installClickID: "clk_123", openClickID: nil, openType: "organic")))
            list.append(
                Fixture(
                    body: retention, kind: .retention, header: header, name: "app_open", platform: .android,
                    clientTimestamp: "2026-06-01T10:20:30.123Z", sdk: header))
        }
        list.append(
            Fixture(
                body: bodySDK, kind: .event, header: nil, name: "purchase", platform: .ios,
                clientTimestamp: "2026-04-02T15:51:10.000Z", sdk: "react-native", data: #"{"revenue":29.99}"#))
        list.append(
            Fixture(
                body: bodySDK, kind: .event, header: "ios/1.0.2", name: "purchase", platform: .ios,
                clientTimestamp: "2026-04-02T15:51:10.000Z", sdk: "ios/1.0.2", data: #"{"revenue":29.99}"#))
        list.append(
            Fixture(
                body: androidAttribution, kind: .event, header: "android/2.1.0", name: "add_to_cart",
                platform: .android,
                clientTimestamp: "2026-07-20T08:00:00.000Z", sdk: "android/2.1.0", data: #"{"sku":"abc"}"#,
                attribution: Attribution(openType: "organic")))
        return list
    }()

    @Test("every wire-format literal is accepted with the right envelope fields", arguments: fixtures)
    func literal(_ fixture: Fixture) throws {
        // The server receives each literal one second after the device sent it.
        let client = try #require(Timestamp(iso8601: fixture.clientTimestamp))
        let received = Timestamp(microseconds: client.microseconds + 1_000_000)
        let context = RequestContext(appID: "app_1", sdkHeader: fixture.header, receivedAt: received)
        let result = try Normalizer.single(body: Array(fixture.body.utf8), kind: fixture.kind, context: context)
        #expect(result.rejected.isEmpty)
        #expect(result.warnings.isEmpty)
        let envelope = try #require(result.accepted.first)
        #expect(result.accepted.count == 1)
        #expect(envelope.app == "app_1")
        #expect(envelope.kind == fixture.kind)
        #expect(envelope.name == fixture.name)
        #expect(envelope.device == "3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b")
        #expect(envelope.platform == fixture.platform)
        #expect(envelope.sdk == fixture.sdk)
        #expect(envelope.clientTimestamp?.iso8601 == fixture.clientTimestamp)
        #expect(envelope.time.iso8601 == fixture.clientTimestamp)
        #expect(envelope.clock == .ok)
        #expect(envelope.receivedAt == received)
        #expect(envelope.sentAt == nil)
        #expect(envelope.data.map { String(decoding: $0, as: UTF8.self) } == fixture.data)
        #expect(envelope.attribution == fixture.attribution)
        #expect(envelope.id.hasPrefix("h:") && envelope.id.utf8.count == 34)
        #expect(try Envelope(decoding: envelope.encoded()) == envelope)
    }

    @Test("click_id and metadata are kept; metadata byte for byte")
    func clickIDAndMetadata() throws {
        let context = RequestContext(appID: "app_1", receivedAt: Self.received)
        let result = try Normalizer.single(body: Array(Self.clickAndMetadata.utf8), kind: .event, context: context)
        let envelope = try #require(result.accepted.first)
        #expect(envelope.clickID == "clk_9")
        #expect(envelope.metadata.map { String(decoding: $0, as: UTF8.self) } == #"{"screen":"home","n":[1,2]}"#)
        #expect(envelope.data == nil)
    }

    @Test("the envelope line has the documented keys in order")
    func envelopeLine() throws {
        let received = Timestamp(iso8601: "2026-07-20T08:00:01.000Z")!
        let context = RequestContext(appID: "app_1", sdkHeader: "ios/1.0.2", receivedAt: received)
        let result = try Normalizer.single(body: Array(Self.attributed.utf8), kind: .event, context: context)
        let envelope = try #require(result.accepted.first)
        let line = String(decoding: envelope.encoded(), as: UTF8.self)
        let expected =
            #"{"v":1,"id":"\#(envelope.id)","app":"app_1","kind":"event","time":"2026-07-20T08:00:00.000Z","received_at":"2026-07-20T08:00:01.000Z","clock":"ok","name":"add_to_cart","device":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","platform":"ios","sdk":"ios/1.0.2","client_ts":"2026-07-20T08:00:00.000Z","attribution":{"install_click_id":"clk_123","open_click_id":null,"open_type":"organic"},"data":{"sku":"abc"}}"#
        #expect(line == expected)
    }
}
