import Testing

@testable import EventModel

@Suite struct BatchTests {
    static let received: Timestamp = Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!
    static let context: RequestContext = RequestContext(appID: "app_1", sdkHeader: nil, receivedAt: received)
    static func event(_ extra: String = "", name: String = "purchase", timestamp: String = "2026-06-01T10:20:30.123Z")
        -> String
    {
        #"{"event_name":"\#(name)","timestamp":"\#(timestamp)","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"\#(extra)}"#
    }

    @Test("a batch accepts good events and rejects bad ones by index")
    func mixed() throws {
        let body =
            #"{"batch":[\#(Self.event()),\#(Self.event(#","type":"retention""#, name: "app_open")),42,\#(Self.event(#","type":"install""#)),\#(Self.event(#","platform":"web""#).replacingOccurrences(of: #""platform":"ios","#, with: ""))]}"#
        let result = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
        #expect(result.accepted.map(\.kind) == [.event, .retention])
        #expect(result.accepted.map(\.name) == ["purchase", "app_open"])
        #expect(result.rejected.map(\.index) == [2, 3, 4])
        #expect(result.rejected.map(\.code) == ["invalid_event", "invalid_kind", "invalid_platform"])
    }

    @Test("client ids are read from event_id, message_id, messageId, insert_id and uuid, in that order")
    func clientIDs() throws {
        let body =
            #"{"batch":[\#(Self.event(#","event_id":"e1""#)),\#(Self.event(#","message_id":"m1""#)),\#(Self.event(#","messageId":"m2""#)),\#(Self.event(#","insert_id":"i1""#)),\#(Self.event(#","uuid":"u1""#)),\#(Self.event(#","uuid":"u2","event_id":"e2""#)),\#(Self.event())]}"#
        let result = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
        let ids = result.accepted.map(\.id)
        #expect(Array(ids.prefix(6)) == ["e1", "m1", "m2", "i1", "u1", "e2"])
        #expect(ids[6].hasPrefix("h:"))
    }

    @Test(
        "a client id that is not a string, or is empty, is passed over for the next alias or the hash; the event is kept"
    )
    func unusableClientIDs() throws {
        // Amplitude's integer event_id (a counter) beside its insert_id; an unset id written as "".
        let body =
            #"{"batch":[\#(Self.event(#","event_id":12,"insert_id":"i-1""#)),\#(Self.event(#","event_id":"","messageId":"m-1""#)),\#(Self.event(#","message_id":"","uuid":{"v":1}"#)),\#(Self.event(#","event_id":1.5e3"#)),\#(Self.event())]}"#
        let result = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
        #expect(result.rejected.isEmpty)
        let ids = result.accepted.map(\.id)
        #expect(Array(ids.prefix(2)) == ["i-1", "m-1"])
        // No usable id: the hash, the same as for the event without any id.
        #expect(ids[2] == ids[4] && ids[3] == ids[4])
        #expect(ids[4].hasPrefix("h:"))
        // A string that is present but unusable still names the problem.
        let forged = #"{"batch":[\#(Self.event(#","event_id":12,"insert_id":"h:x""#))]}"#
        let refused = try Normalizer.batch(body: Array(forged.utf8), context: Self.context)
        #expect(refused.rejected.map(\.code) == ["invalid_event_id"])
        #expect(refused.rejected.first?.message.contains("\"insert_id\" must be at most 128 bytes") == true)
    }

    @Test("sent_at is copied to every envelope and Segment's sentAt is read too")
    func sentAt() throws {
        for key in ["sent_at", "sentAt"] {
            let body = #"{"\#(key)":"2026-06-01T10:20:30.500Z","batch":[\#(Self.event())]}"#
            let result = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
            #expect(result.accepted.first?.sentAt == Timestamp(iso8601: "2026-06-01T10:20:30.500Z"))
            #expect(result.accepted.first?.clock == .ok)
        }
        // A null sent_at counts as absent, so Segment's sentAt beside it is read.
        let null = #"{"sent_at":null,"sentAt":"2026-06-01T10:20:30.500Z","batch":[\#(Self.event())]}"#
        let withNull = try Normalizer.batch(body: Array(null.utf8), context: Self.context)
        #expect(withNull.accepted.first?.sentAt == Timestamp(iso8601: "2026-06-01T10:20:30.500Z"))
        #expect(withNull.warnings.isEmpty)
        let bad = #"{"sent_at":"yesterday","batch":[\#(Self.event())]}"#
        let result = try Normalizer.batch(body: Array(bad.utf8), context: Self.context)
        #expect(result.accepted.count == 1)
        #expect(result.accepted.first?.sentAt == nil)
        #expect(result.warnings.count == 1)
    }

    @Test("an element's own sent_at is read with null as absent, sent_at before sentAt, and given twice is ambiguous")
    func elementSentAt() throws {
        let sentAt = Timestamp(iso8601: "2026-06-01T08:00:00.000Z")
        let body =
            #"{"batch":[\#(Self.event(#","sent_at":null,"sentAt":"2026-06-01T08:00:00Z""#)),\#(Self.event(#","sent_at":"2026-06-01T08:00:00Z","sentAt":"bad""#)),\#(Self.event(#","sent_at":"2026-06-01T08:00:00Z","sent_at":"2026-06-01T09:00:00Z""#))]}"#
        let result = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
        #expect(result.accepted.map(\.sentAt) == [sentAt, sentAt])
        #expect(result.accepted.map(\.clock) == [.skewCorrected, .skewCorrected])
        #expect(result.warnings.isEmpty)
        #expect(result.rejected.map(\.index) == [2])
        #expect(result.rejected.map(\.code) == ["duplicate_key"])
    }

    static let bodyErrors: [(String, String)] = [
        (#"{"batch":[]}"#, "empty_batch"),
        (#"{"events":[]}"#, "invalid_batch"),
        (#"{"batch":{}}"#, "invalid_batch"),
        (#"[]"#, "not_an_object"),
        (#"{"batch":[1,]}"#, "invalid_json"),
    ]

    @Test("body-level batch errors refuse the request", arguments: bodyErrors)
    func bodyError(_ body: String, _ code: String) {
        #expect {
            _ = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
        } throws: { error in
            (error as? BodyError)?.code == code
        }
    }

    @Test(
        "a repeated batch or sent_at member refuses the whole body by name; a repeated member it does not read does not"
    )
    func repeatedMembers() throws {
        // Reading the first `batch` accepted its events and dropped the second's without a trace.
        for (body, name) in [
            (#"{"batch":[\#(Self.event())],"batch":[\#(Self.event(name: "sign_up"))]}"#, "batch"),
            (#"{"sent_at":"2026-06-01T08:00:00Z","batch":[\#(Self.event())],"sent_at":null}"#, "sent_at"),
            (
                #"{"sentAt":"2026-06-01T08:00:00Z","sentAt":"2026-06-01T09:00:00Z","batch":[\#(Self.event())]}"#,
                "sentAt"
            ),
        ] {
            for encoded in [false, true] {
                let refused = #expect(throws: BodyError.self) {
                    if encoded {
                        _ = try Normalizer.encodedBatch(body: Array(body.utf8), context: Self.context)
                    } else {
                        _ = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
                    }
                }
                #expect(refused?.code == "invalid_batch")
                #expect(refused?.description == #"the member "\#(name)" appears more than once in the body"#)
            }
        }
        let ignored = #"{"context":{"a":1},"context":2,"batch":[\#(Self.event())]}"#
        #expect(try Normalizer.batch(body: Array(ignored.utf8), context: Self.context).accepted.count == 1)
    }

    @Test("more events than maxBatchEvents refuse the batch")
    func tooMany() {
        let body = #"{"batch":[\#(Array(repeating: Self.event(), count: 4).joined(separator: ","))]}"#
        #expect(throws: BodyError.tooManyEvents(count: 4, limit: 3)) {
            try Normalizer.batch(body: Array(body.utf8), context: Self.context, limits: IngestLimits(maxBatchEvents: 3))
        }
        let exact = try? Normalizer.batch(
            body: Array(body.utf8), context: Self.context, limits: IngestLimits(maxBatchEvents: 4))
        #expect(exact?.accepted.count == 4)
    }

    @Test("a 2,000-event batch of realistic events is accepted whole")
    func fullBatch() throws {
        var events: [String] = []
        for k in 0..<2000 { events.append(Self.event(#","data":{"n":\#(k)},"message_id":"m\#(k)""#)) }
        let body = #"{"sent_at":"2026-06-01T10:20:30.900Z","batch":[\#(events.joined(separator: ","))]}"#
        let result = try Normalizer.batch(body: Array(body.utf8), context: Self.context)
        #expect(result.accepted.count == 2000)
        #expect(Set(result.accepted.map(\.id)).count == 2000)
        #expect(result.accepted[1999].data == Array(#"{"n":1999}"#.utf8))
    }
}

@Suite struct ClockRuleTests {
    static let received: Timestamp = Timestamp(iso8601: "2026-06-01T12:00:00.000Z")!

    static func resolve(_ client: String, sentAt: String?) -> (String, ClockStatus) {
        let (time, clock) = ClockRule.resolve(
            client: Timestamp(iso8601: client)!, sentAt: sentAt.flatMap { Timestamp(iso8601: $0) }, receivedAt: received
        )
        return (time.iso8601, clock)
    }

    @Test("without sent_at the client time is kept")
    func noSentAt() {
        #expect(Self.resolve("2026-06-01T11:00:00.000Z", sentAt: nil) == ("2026-06-01T11:00:00.000Z", .ok))
        #expect(Self.resolve("2020-01-01T00:00:00.000Z", sentAt: nil) == ("2020-01-01T00:00:00.000Z", .ok))
    }

    @Test("a skew of 5 minutes or less is network delay and is not corrected")
    func smallSkew() {
        #expect(
            Self.resolve("2026-06-01T11:50:00.000Z", sentAt: "2026-06-01T11:55:00.000Z") == (
                "2026-06-01T11:50:00.000Z", .ok
            ))
        #expect(
            Self.resolve("2026-06-01T12:01:00.000Z", sentAt: "2026-06-01T12:05:00.000Z") == (
                "2026-06-01T12:01:00.000Z", .ok
            ))
    }

    @Test("a skew over 5 minutes shifts the event by the device clock's error")
    func largeSkew() {
        // Device clock 2 hours behind: sent_at 10:00 device time = 12:00 server time.
        #expect(
            Self.resolve("2026-06-01T09:59:00.000Z", sentAt: "2026-06-01T10:00:00.000Z") == (
                "2026-06-01T11:59:00.000Z", .skewCorrected
            ))
        // Device clock 1 day ahead.
        #expect(
            Self.resolve("2026-06-02T11:30:00.000Z", sentAt: "2026-06-02T12:00:00.000Z") == (
                "2026-06-01T11:30:00.000Z", .skewCorrected
            ))
        #expect(
            Self.resolve("2026-06-01T11:54:59.999Z", sentAt: "2026-06-01T11:54:59.999Z") == (
                "2026-06-01T12:00:00.000Z", .skewCorrected
            ))
    }

    @Test("times more than 24 hours ahead are clamped to received_at; 24 hours exactly is kept")
    func future() {
        #expect(Self.resolve("2026-06-02T12:00:00.000Z", sentAt: nil) == ("2026-06-02T12:00:00.000Z", .ok))
        #expect(Self.resolve("2026-06-02T12:00:00.001Z", sentAt: nil) == ("2026-06-01T12:00:00.000Z", .futureClamped))
        #expect(
            Self.resolve("2030-01-01T00:00:00.000Z", sentAt: "2030-01-01T00:00:00.000Z") == (
                "2026-06-01T12:00:00.000Z", .skewCorrected
            ))
    }

    @Test("a clamped event is accepted with a warning, never dropped")
    func clampedIsAccepted() throws {
        let body = #"{"event_name":"a","timestamp":"2031-01-01T00:00:00.000Z","platform":"ios","device_id":"d1"}"#
        let result = try Normalizer.single(
            body: Array(body.utf8), kind: .event, context: RequestContext(appID: "a", receivedAt: Self.received))
        #expect(result.accepted.first?.clock == .futureClamped)
        #expect(result.accepted.first?.time == Self.received)
        #expect(result.accepted.first?.clientTimestamp == Timestamp(iso8601: "2031-01-01T00:00:00.000Z"))
        #expect(result.warnings.count == 1)
    }

    @Test("a rejected event carries no clock warning")
    func rejectedHasNoWarning() throws {
        let body =
            #"{"event_name":"a","timestamp":"2031-01-01T00:00:00.000Z","platform":"ios","device_id":"d1","attribution":7}"#
        let result = try Normalizer.single(
            body: Array(body.utf8), kind: .event, context: RequestContext(appID: "a", receivedAt: Self.received))
        #expect(result.rejected.map(\.code) == ["invalid_type"])
        #expect(result.warnings.isEmpty)
    }
}
