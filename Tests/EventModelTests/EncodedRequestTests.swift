import TestSupport
import Testing

@testable import EventModel

/// The line-writing fast path must agree with envelopes + `encoded()` byte for byte.
@Suite struct EncodedRequestTests {
    static let received: Timestamp = Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!

    static let events: [String] =
        ScannerBenchmark.sampleEvents + [
            #"{"event_name":"caf\u00e9 \"q\" \n","timestamp":"2026-06-01T10:20:30.123+02:00","platform":"IOS","device_id":"3F2B8C1E-9A4D-4E2B-8F1A-2C3D4E5F6A7B","click_id":"clk_9","metadata":{"a":[1,2,{"b":null}]},"data":null}"#,
            #"{"event_name":"a","timestamp":"2031-01-01T00:00:00Z","platform":"android","device_id":"Not-A-UUID\u00e9","attribution":{"open_type":"organic"},"sdk":"flutter","message_id":"m-1"}"#,
            #"{"event_name":"b","timestamp":"2026-06-01T10:20:30Z","platform":"ios","device_id":"d","attribution":{"install_click_id":null,"open_click_id":"o","extra":1},"click_id":"","sdk":""}"#,
            #"{"event_name":"c","timestamp":"2026-06-01T10:20:30Z","platform":"ios","device_id":"d","attribution":null,"type":"retention","uuid":"u"}"#,
            #"{"event_name":"d","timestamp":"2026-06-01T10:20:30Z","platform":"ios","device_id":"d","app_version":"2.4\n","idfv":null,"metadata":{"app_version":"x","k":1}}"#,
            #"{"event_name":"e","timestamp":"2026-06-01T10:20:30Z","platform":"ios","device_id":"d","locale":[{"languageTag":"pl-PL"}],"metadata":"m"}"#,
            #"{"event_name":"f","timestamp":"2026-06-01T10:20:30Z","platform":"ios","device_id":"d","event_id":12,"insert_id":"i-1"}"#,
            #"{"event_name":"g","timestamp":"2026-06-01T10:20:30Z","platform":"ios","device_id":"d","event_id":"","uuid":true}"#,
            #"{"event_name":"h","timestamp":"2026-06-01T07:59:00Z","platform":"ios","device_id":"d","sent_at":"2026-06-01T08:00:00Z"}"#,
            #"{"event_name":"i","timestamp":"2026-06-01T10:19:00Z","platform":"ios","device_id":"d","sentAt":"soon","sent_at":null}"#,
            #"{"event_name":"bad"}"#,
            #"[1]"#,
        ]

    func expectSame(_ encoded: EncodedRequest, _ plain: NormalizedRequest) {
        #expect(encoded.records == plain.accepted.map { $0.encoded() })
        #expect(encoded.rejected == plain.rejected)
        #expect(encoded.warnings == plain.warnings)
        #expect(encoded.encodedResponse() == plain.encodedResponse())
    }

    @Test(
        "single events: the same lines, rejections and warnings as envelopes",
        arguments: [nil, "ios/1.0.2", String(repeating: "x", count: 300)] as [String?])
    func singles(_ header: String?) throws {
        let context = RequestContext(appID: "app \"1\"", sdkHeader: header, receivedAt: Self.received)
        for body in Self.events {
            for kind in [EventKind.event, .retention] {
                let bytes = Array(body.utf8)
                let plain = try? Normalizer.single(body: bytes, kind: kind, context: context)
                let encoded = try? Normalizer.encodedSingle(body: bytes, kind: kind, context: context)
                #expect((plain == nil) == (encoded == nil))
                if let plain, let encoded { expectSame(encoded, plain) }
            }
        }
    }

    @Test("an event at the deepest --max-depth ingest allows makes an envelope line the loader reads")
    func deepestEventDecodes() throws {
        let depth = IngestLimits(maxDepth: Envelope.maxEventDepth).maxDepth
        // A top-level metadata member (moved one level down, into `metadata`) and `data`, each
        // nested as deep as the event may be (the event object is level 1).
        let nested = String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1)
        let body =
            #"{"event_name":"a","timestamp":"2026-06-01T10:20:30Z","platform":"ios","device_id":"d","locale":\#(nested),"data":\#(nested)}"#
        let context = RequestContext(appID: "app_1", receivedAt: Self.received)
        let encoded = try Normalizer.encodedSingle(
            body: Array(body.utf8), kind: .event, context: context, limits: IngestLimits(maxDepth: depth))
        #expect(encoded.rejected.isEmpty)
        let line = try #require(encoded.records.first)
        let envelope = try Envelope(decoding: line)
        #expect(envelope.metadata == Array(#"{"locale":\#(nested)}"#.utf8))
        #expect(envelope.data == Array(nested.utf8))
        // One level deeper is rejected at ingest, not acknowledged.
        let deeper = try Normalizer.encodedSingle(
            body: Array(
                body.replacingOccurrences(of: #""data":["#, with: #""data":[["#).replacingOccurrences(
                    of: "]}", with: "]]}"
                ).utf8),
            kind: .event, context: context, limits: IngestLimits(maxDepth: depth))
        #expect(deeper.rejected.map(\.code) == ["too_deep"])
    }

    @Test("batches with and without skew: the same lines as envelopes")
    func batches() throws {
        for sentAt in [
            "", #""sent_at":"2026-06-01T08:00:00Z","#, #""sent_at":"2026-06-01T10:20:30.900Z","#, #""sentAt":"bad","#,
        ] {
            let body = Array(#"{\#(sentAt)"batch":[\#(Self.events.joined(separator: ","))]}"#.utf8)
            let context = RequestContext(appID: "app_1", receivedAt: Self.received)
            expectSame(
                try Normalizer.encodedBatch(body: body, context: context),
                try Normalizer.batch(body: body, context: context))
        }
        let sample = ScannerBenchmark.sampleBodies.last!
        let context = RequestContext(appID: "app_1", sdkHeader: "ios/1.0.2", receivedAt: Self.received)
        expectSame(
            try Normalizer.encodedBatch(body: sample, context: context),
            try Normalizer.batch(body: sample, context: context))
    }

    @Test("times outside years 0000-9999 are stored as the nearest end of them, on both paths and for link events")
    func edgesOfTheRange() throws {
        let context = RequestContext(appID: "app_1", receivedAt: Self.received)
        // 0000-01-01T00:30+01:00 is 23:30Z on the last day of the year before 0000; 9999-12-31T23:00-05:00
        // is 04:00Z in the year after 9999 (and, over 24 hours ahead, its event time is received_at).
        for (sent, stored) in [
            ("0000-01-01T00:30:00+01:00", "0000-01-01T00:00:00.000Z"),
            ("9999-12-31T23:00:00-05:00", "9999-12-31T23:59:59.999Z"),
        ] {
            let event = Array(#"{"event_name":"e","timestamp":"\#(sent)","platform":"ios","device_id":"d"}"#.utf8)
            let encoded = try Normalizer.encodedSingle(body: event, kind: .event, context: context)
            let plain = try Normalizer.single(body: event, kind: .event, context: context)
            expectSame(encoded, plain)
            let line = String(decoding: try #require(encoded.records.first), as: UTF8.self)
            #expect(line.contains(#""client_ts":"\#(stored)""#), "\(line)")
            if sent.hasPrefix("0000") { #expect(line.contains(#""time":"\#(stored)""#), "\(line)") }

            let link = Array(#"{"matches":[{"click_id":"c","timestamp":"\#(sent)","method":"deterministic"}]}"#.utf8)
            let linkResult = try Normalizer.encodedLinkEvents(body: link, context: context)
            let linkLine = String(
                decoding: try #require(linkResult.records.first, "\(linkResult.rejected)"), as: UTF8.self)
            #expect(linkLine.contains(#""client_ts":"\#(stored)""#), "\(linkLine)")
        }
    }

    @Test("link events: the same lines as envelopes")
    func links() throws {
        let body = Array(
            #"{"clicks":[{"click_id":"c","url":"https://a.godetour.link/H/x?u=1","timestamp":"2026-06-01T10:20:30Z","kind":"web"}],"matches":[{"click_id":"c","timestamp":"2026-06-01T10:20:30Z","method":"x"}]}"#
                .utf8)
        let context = RequestContext(appID: "app_1", receivedAt: Self.received)
        expectSame(
            try Normalizer.encodedLinkEvents(body: body, context: context),
            try Normalizer.linkEvents(body: body, context: context))
    }

    @Test("300 mutated batches: both paths agree on every outcome")
    func mutations() {
        var random = SeededGenerator(state: 7)
        let seed = ScannerBenchmark.sampleBodies.last!
        let context = RequestContext(appID: "app_1", receivedAt: Self.received)
        for _ in 0..<300 {
            var body = seed
            for _ in 0..<(1 + random.below(3)) {
                let at = random.below(body.count)
                body[at] = ScannerFuzzTests.interesting[random.below(ScannerFuzzTests.interesting.count)]
            }
            let plain = Result { () throws(BodyError) in try Normalizer.batch(body: body, context: context) }
            let encoded = Result { () throws(BodyError) in try Normalizer.encodedBatch(body: body, context: context) }
            switch (plain, encoded) {
            case (.success(let p), .success(let e)): expectSame(e, p)
            case (.failure(let p), .failure(let e)): #expect(p == e)
            default: Issue.record("the two paths disagree on whether the body is acceptable")
            }
        }
    }
}
