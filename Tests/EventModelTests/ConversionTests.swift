import Testing

@testable import EventModel

/// `POST /api/analytics/conversion` (later React Native SDK sources): the purchase fields at the top
/// level are stored in `data`, and otherwise the event is what `/api/analytics/event` makes of it.
@Suite struct ConversionTests {
    static let received: Timestamp = Timestamp(iso8601: "2026-09-01T12:00:01.000Z")!
    static let context = RequestContext(appID: "app_1", sdkHeader: "react-native/1.5.0", receivedAt: received)
    static let tail = #""timestamp":"2026-09-01T12:00:00.000Z","platform":"ios","device_id":"D1""#

    func conversion(_ body: String) throws -> EncodedRequest {
        try Normalizer.encodedConversion(body: Array(body.utf8), context: Self.context)
    }

    func event(_ body: String) throws -> EncodedRequest {
        try Normalizer.encodedSingle(body: Array(body.utf8), kind: .event, context: Self.context)
    }

    @Test("the SDK's conversion is the /event action with its purchase fields in data, byte for byte")
    func sdkBody() throws {
        let sent = try conversion(
            #"{"event_name":"purchase","revenue":29.99,"currency":"USD","product_id":"sku/1","quantity":2,"#
                + #""transaction_id":"T-1",\#(Self.tail),"metadata":{"app_version":"2.4.0"}}"#)
        let same = try event(
            #"{"event_name":"purchase",\#(Self.tail),"metadata":{"app_version":"2.4.0"},"#
                + #""data":{"revenue":29.99,"currency":"USD","product_id":"sku/1","quantity":2,"transaction_id":"T-1"}}"#
        )
        #expect(sent.rejected.isEmpty && sent.warnings.isEmpty)
        #expect(sent.records.count == 1)
        #expect(sent.records == same.records)
        let envelope = try Envelope(decoding: sent.records[0])
        #expect(envelope.kind == .event && envelope.name == "purchase" && envelope.sdk == "react-native/1.5.0")
        #expect(envelope.device == "D1" && envelope.platform == .ios)
    }

    @Test(
        "members in a fixed order, null and absent ones left out, the body's own data object after them",
        arguments: [
            (#""quantity":1,"revenue":"5.00""#, #"{"revenue":"5.00","quantity":1}"#),
            (#""revenue":5,"currency":null,"product_id":null"#, #"{"revenue":5}"#),
            (#""revenue":5,"data":{"reason":"late","n":[1]}"#, #"{"revenue":5,"reason":"late","n":[1]}"#),
            (#""data":{"reason":"late"}"#, #"{"reason":"late"}"#),
            (#""data":{}"#, #"{}"#),
            (#""revenue":1,"data":null"#, #"{"revenue":1}"#),
            (#""reven\u0075e":1"#, #"{"revenue":1}"#),
        ])
    func data(members: String, stored: String) throws {
        let sent = try conversion(#"{"event_name":"refund",\#(members),\#(Self.tail)}"#)
        let same = try event(#"{"event_name":"refund",\#(Self.tail),"data":\#(stored)}"#)
        #expect(sent.records.count == 1)
        #expect(sent.records == same.records)
    }

    @Test("without any conversion member or data the event has no data, as on /event")
    func noData() throws {
        let sent = try conversion(#"{"event_name":"sign_up",\#(Self.tail),"revenue":null}"#)
        #expect(sent.records == (try event(#"{"event_name":"sign_up",\#(Self.tail)}"#)).records)
        #expect(try Envelope(decoding: sent.records[0]).data == nil)
    }

    @Test(
        "a moved member or data twice, or data that is not an object, is rejected and kept as sent",
        arguments: [
            (#""revenue":1,"revenue":2"#, "duplicate_key"),
            (#""transaction_id":"a","transaction_id":"a""#, "duplicate_key"),
            (#""data":{},"data":{}"#, "duplicate_key"),
            (#""data":[1]"#, "invalid_type"),
            (#""data":"x","revenue":1"#, "invalid_type"),
        ])
    func rejected(members: String, code: String) throws {
        let body = #"{"event_name":"purchase",\#(members),\#(Self.tail)}"#
        let sent = try conversion(body)
        #expect(sent.records.isEmpty)
        #expect(sent.rejected.map(\.code) == [code])
        #expect(sent.rejected.first.map { Array($0.rawEvent) } == Array(body.utf8))
    }

    @Test("the event's own checks apply, and its rejection keeps the conversion as it arrived")
    func eventChecks() throws {
        let body = #"{"event_name":"purchase","revenue":1,"timestamp":"yesterday","platform":"ios","device_id":"D1"}"#
        let sent = try conversion(body)
        #expect(sent.rejected.map(\.code) == ["invalid_timestamp"])
        #expect(sent.rejected.first.map { Array($0.rawEvent) } == Array(body.utf8))
        #expect(throws: BodyError.notAnObject) { try conversion("[1]") }
        #expect(throws: BodyError.self) { try conversion(#"{"event_name":"#) }
    }

    @Test("the size limit holds for the conversion as it arrived, not for its rewrite (9 bytes longer)")
    func sizeAsArrived() throws {
        func body(bytes: Int) -> String {
            let head = #"{"event_name":"purchase","revenue":1,\#(Self.tail),"metadata":{"pad":""#
            let end = #""}}"#
            return head + String(repeating: "a", count: bytes - head.utf8.count - end.utf8.count) + end
        }
        let limit = IngestLimits().maxEventBytes
        let atLimit = try conversion(body(bytes: limit))
        #expect(atLimit.rejected.isEmpty && atLimit.records.count == 1, "\(atLimit.rejected)")
        let over = try conversion(body(bytes: limit + 1))
        #expect(over.rejected.map(\.code) == ["event_too_large"])
        #expect(over.rejected.first?.message == "the event is \(limit + 1) bytes, at most \(limit) are allowed")
    }

    @Test("the depth limit holds for the conversion as it arrived: a moved member goes one level deeper")
    func depthAsArrived() throws {
        let limit = IngestLimits().maxDepth
        // The event object is level 1: a revenue of limit - 1 nested arrays is at the limit.
        func body(arrays: Int) -> String {
            let revenue = String(repeating: "[", count: arrays) + "1" + String(repeating: "]", count: arrays)
            return #"{"event_name":"purchase","revenue":\#(revenue),\#(Self.tail)}"#
        }
        let atLimit = try conversion(body(arrays: limit - 1))
        #expect(atLimit.rejected.isEmpty && atLimit.records.count == 1, "\(atLimit.rejected)")
        let over = try conversion(body(arrays: limit))
        #expect(over.rejected.map(\.code) == ["too_deep"])
        #expect(
            over.rejected.first?.message == "the event nests \(limit + 1) levels deep, at most \(limit) are allowed")
    }

    @Test("a moved member the body's data has too is stored once, with the value in data, and a warning")
    func memberAlsoInData() throws {
        let sent = try conversion(
            #"{"event_name":"purchase","revenue":5,"currency":"EUR","data":{"revenue":6,"note":"x"},\#(Self.tail)}"#)
        #expect(sent.records.count == 1)
        #expect(
            try Envelope(decoding: sent.records[0]).data == Array(#"{"currency":"EUR","revenue":6,"note":"x"}"#.utf8))
        #expect(sent.warnings == [#"event 0: "revenue" also in "data"; the value in "data" was stored"#])
    }

    @Test("a lone surrogate escape is read as U+FFFD with the /event warning")
    func loneSurrogate() throws {
        let sent = try conversion(#"{"event_name":"purchase","product_id":"a\uD800b",\#(Self.tail)}"#)
        #expect(sent.records.count == 1)
        #expect(sent.warnings == [EventNormalizer.loneSurrogateWarning])
        #expect(try Envelope(decoding: sent.records[0]).data == Array(#"{"product_id":"a\ufffdb"}"#.utf8))
    }

    @Test("a repeated conversion gets the same hashed id, another amount another id")
    func hashedID() throws {
        let one = #"{"event_name":"purchase","revenue":1,\#(Self.tail)}"#
        let id = { (body: String) in try Envelope(decoding: try conversion(body).records[0]).id }
        #expect(try id(one) == (try id(one)))
        #expect(try id(one) != (try id(#"{"event_name":"purchase","revenue":2,\#(Self.tail)}"#)))
    }
}
