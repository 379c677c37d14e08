import Testing

@testable import EventModel

@Suite struct NormalizerRejectionTests {
    static let context = RequestContext(appID: "app_1", receivedAt: Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!)
    static let device = #""device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b""#
    static let good = #""event_name":"purchase","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios",\#(device)"#

    static let cases: [(String, String)] = [
        (#"{"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios",\#(device)}"#, "missing_field"),
        (#"{"event_name":"a","platform":"ios",\#(device)}"#, "missing_field"),
        (#"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z",\#(device)}"#, "missing_field"),
        (#"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios"}"#, "missing_field"),
        (#"{"event_name":null,"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios",\#(device)}"#, "missing_field"),
        (#"{"event_name":42,"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios",\#(device)}"#, "invalid_type"),
        (#"{"event_name":"a","timestamp":1780309230,"platform":"ios",\#(device)}"#, "invalid_type"),
        (#"{\#(good),"attribution":"clk_1"}"#, "invalid_type"),
        (#"{\#(good),"attribution":{"open_type":1}}"#, "invalid_type"),
        (#"{\#(good),"click_id":7}"#, "invalid_type"),
        (#"{\#(good),"message_id":"a\u0001b"}"#, "invalid_event_id"),
        (#"{"event_name":"a","timestamp":"2026-06-01 10:20","platform":"ios",\#(device)}"#, "invalid_timestamp"),
        (#"{"event_name":"a","timestamp":"2026-02-30T10:20:30Z","platform":"ios",\#(device)}"#, "invalid_timestamp"),
        (#"{"event_name":"","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios",\#(device)}"#, "invalid_name"),
        (
            #"{"event_name":"\#(String(repeating: "é", count: 129))","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios",\#(device)}"#,
            "name_too_long"
        ),
        (#"{\#(good),"data":"\#(String(repeating: "x", count: 33 * 1024))"}"#, "event_too_large"),
        (#"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"web",\#(device)}"#, "invalid_platform"),
        (
            #"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"desktop",\#(device)}"#,
            "invalid_platform"
        ),
        (
            #"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":""}"#,
            "invalid_device_id"
        ),
        (
            #"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"\#(String(repeating: "d", count: 129))"}"#,
            "invalid_device_id"
        ),
        (
            #"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"a\nb"}"#,
            "invalid_device_id"
        ),
        (#"{\#(good),"event_id":"\#(String(repeating: "e", count: 129))"}"#, "invalid_event_id"),
        (#"{\#(good),"event_id":"h:forged"}"#, "invalid_event_id"),
        (#"{\#(good),"data":\#(String(repeating: "[", count: 32))\#(String(repeating: "]", count: 32))}"#, "too_deep"),
        (#"{\#(good),"event_name":"again"}"#, "duplicate_key"),
        (#"{\#(good),"event\u005fname":"again"}"#, "duplicate_key"),
    ]

    @Test("each bad event is rejected with its stable code", arguments: cases)
    func rejection(_ body: String, _ code: String) throws {
        let result = try Normalizer.single(body: Array(body.utf8), kind: .event, context: Self.context)
        #expect(result.accepted.isEmpty)
        #expect(result.rejected.map(\.code) == [code])
        #expect(result.rejected.first?.index == 0)
        #expect(result.rejected.first?.message.isEmpty == false)
    }

    @Test("limits come from IngestLimits: nesting exactly at the limit is accepted")
    func depthAtLimit() throws {
        // The event object is level 1, so 31 nested arrays inside it make 32 levels.
        let body = #"{\#(Self.good),"data":\#(String(repeating: "[", count: 31))\#(String(repeating: "]", count: 31))}"#
        let result = try Normalizer.single(body: Array(body.utf8), kind: .event, context: Self.context)
        #expect(result.accepted.count == 1)
        let small = IngestLimits(maxEventBytes: 100, maxNameLength: 3)
        let tight = try Normalizer.single(body: Array(body.utf8), kind: .event, context: Self.context, limits: small)
        #expect(tight.rejected.map(\.code) == ["event_too_large"])
        let name = #"{"event_name":"abcd","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios",\#(Self.device)}"#
        let long = try Normalizer.single(
            body: Array(name.utf8), kind: .event, context: Self.context, limits: IngestLimits(maxNameLength: 3))
        #expect(long.rejected.map(\.code) == ["name_too_long"])
    }

    static let bodyErrors: [(String, String)] = [
        ("", "invalid_json"),
        (#"{"event_name":"a""#, "invalid_json"),
        ("[1,2]", "not_an_object"),
        (#""text""#, "not_an_object"),
        (String(repeating: "[", count: 200), "too_deep"),
    ]

    @Test("a body that is not a JSON object refuses the whole request", arguments: bodyErrors)
    func bodyError(_ body: String, _ code: String) {
        #expect {
            _ = try Normalizer.single(body: Array(body.utf8), kind: .event, context: Self.context)
        } throws: { error in
            (error as? BodyError)?.code == code
        }
    }

    @Test("invalid JSON reports the byte offset of the first error")
    func invalidJSONOffset() {
        #expect(throws: BodyError.invalidJSON(message: "unexpected byte", byteOffset: 14)) {
            try Normalizer.single(body: Array(#"{"event_name":x}"#.utf8), kind: .event, context: Self.context)
        }
        #expect(
            BodyError.invalidJSON(message: "unexpected byte", byteOffset: 14).description
                == "unexpected byte at byte 14")
    }
}
