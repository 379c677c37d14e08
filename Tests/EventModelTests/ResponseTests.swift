import Testing

@testable import EventModel

@Suite struct ResponseTests {
    static let context: RequestContext = RequestContext(
        appID: "app_1", receivedAt: Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!)

    @Test("the answer lists accepted count, rejections by index and warnings as valid JSON")
    func response() throws {
        let body =
            #"{"batch":[{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"d","sdk":""},{"event_name":"b"}]}"#
        let result = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
        let text = String(decoding: result.encodedResponse(), as: UTF8.self)
        #expect(
            text
                == #"{"accepted":1,"rejected":[{"index":1,"code":"missing_field","message":"\"timestamp\" is required"}],"warnings":["event 0: \"sdk\" is not a string of 1 to 128 printable bytes and was ignored"]}"#
        )
        _ = try JSONDocument(parsing: result.encodedResponse())
    }

    @Test(
        "an sdk member of another type is ignored with a warning, never a rejection",
        arguments: ["true", "7", "{}", "[\"ios\"]"])
    func sdkOfAnotherType(_ sdk: String) throws {
        let body =
            #"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"d","sdk":\#(sdk)}"#
        let result = try Normalizer.single(body: Array(body.utf8), kind: .event, context: Self.context)
        #expect(result.accepted.count == 1 && result.accepted[0].sdk == nil)
        #expect(result.warnings == ["event 0: \"sdk\" is not a string of 1 to 128 printable bytes and was ignored"])
    }

    @Test("a rejection keeps the event's raw bytes for the dead-letter log")
    func rawEvent() throws {
        let body = #"{"batch":[ {"event_name" : 1} ,7]}"#
        let result = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
        #expect(result.rejected.map { String(decoding: $0.rawEvent, as: UTF8.self) } == [#"{"event_name" : 1}"#, "7"])
    }

    @Test("body errors answer with code and message")
    func bodyError() {
        let text = String(
            decoding: BodyError.invalidJSON(message: "unexpected byte", byteOffset: 3).encodedResponse(), as: UTF8.self)
        #expect(text == #"{"error":{"code":"invalid_json","message":"unexpected byte at byte 3"}}"#)
        var buffer: [UInt8] = []
        JSONOutput.appendString("a\"\u{1}", to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #""a\"\u0001""#)
    }

    @Test("an unusable X-SDK header falls back to the body's sdk field with a warning")
    func badHeader() throws {
        let body =
            #"{"event_name":"a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"d","sdk":"flutter"}"#
        let context = RequestContext(
            appID: "app_1", sdkHeader: String(repeating: "x", count: 200), receivedAt: Self.context.receivedAt)
        let result = try Normalizer.single(body: Array(body.utf8), kind: .event, context: context)
        #expect(result.accepted.first?.sdk == "flutter")
        #expect(result.warnings.count == 1)
        // The header is the request's: a batch is told once, with its first accepted event, on
        // both ways of normalising.
        let rejected = #"{"event_name":"a"}"#
        let batch = Array(#"{"batch":[\#(rejected),\#(body),\#(body),\#(body)]}"#.utf8)
        let expected = [
            "event 1: the X-SDK header is not 1 to 128 printable bytes and was ignored (for every event of this request)"
        ]
        let plain = try Normalizer.batch(body: batch, context: context)
        #expect(plain.accepted.count == 3 && plain.accepted.allSatisfy { $0.sdk == "flutter" })
        #expect(plain.warnings == expected)
        #expect(try Normalizer.encodedBatch(body: batch, context: context).warnings == expected)
    }
}
