import Testing

@testable import EventModel

@Suite struct EnvelopeTests {
    static let received: Timestamp = Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!

    static var samples: [Envelope] {
        var event = Envelope(
            id: "h:0123456789abcdef0123456789abcdef", app: "app_1", kind: .event,
            time: Timestamp(iso8601: "2026-06-01T10:20:30.123Z")!, receivedAt: received)
        event.name = "purchase \"quoted\" \\ back\nline\u{1}ctl é😀"
        event.device = "3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"
        event.platform = .ios
        event.sdk = "ios/1.0.2"
        event.clientTimestamp = Timestamp(iso8601: "2026-06-01T10:20:30.123Z")
        event.sentAt = Timestamp(iso8601: "2026-06-01T10:20:30.500Z")
        event.attribution = Attribution(installClickID: "clk_1", openClickID: nil, openType: "organic")
        event.clickID = "clk_9"
        event.data = Array(#"{"revenue":29.99,"s":"\u00e9\n","n":[1,{"x":null}]}"#.utf8)
        event.metadata = Array("[true,false]".utf8)

        var retention = Envelope(
            id: "m1", app: "app_1", kind: .retention,
            time: Timestamp(iso8601: "2026-06-01T10:20:30Z")!, receivedAt: received, clock: .skewCorrected)
        retention.name = "app_open"
        retention.device = "Device-XYZ"
        retention.platform = .android
        retention.clientTimestamp = Timestamp(iso8601: "2026-06-01T08:20:30Z")

        var click = Envelope(
            id: "c1", app: "app_1", kind: .click, time: received, receivedAt: received, clock: .futureClamped)
        click.clickID = "clk_1"
        click.url = "https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news"
        click.path = "/articles/2"
        click.query = [QueryParameter(name: "utm_source", value: "news"), QueryParameter(name: "q", value: "a \"b\"")]
        click.platform = .desktop
        click.clickKind = .universalLink
        click.userAgent = "Mozilla/5.0"
        click.ip = "::1"
        click.referrer = "https://x.example/"
        click.clientTimestamp = Timestamp(iso8601: "2031-01-01T00:00:00Z")

        var match = Envelope(
            id: "h:ffffffffffffffffffffffffffffffff", app: "app_1", kind: .match, time: received, receivedAt: received)
        match.clickID = "clk_1"
        match.method = .probabilistic
        match.score = 851.5
        match.clientTimestamp = received
        return [event, retention, click, match]
    }

    @Test("every kind of envelope survives encode and decode unchanged")
    func roundTrip() throws {
        for envelope in Self.samples {
            let line = envelope.encoded()
            #expect(!line.contains(UInt8(ascii: "\n")))
            _ = try JSONDocument(parsing: line)
            let decoded = try Envelope(decoding: line)
            #expect(decoded == envelope)
            #expect(decoded.encoded() == line)
        }
    }

    @Test("encoding into a reused buffer appends one line per envelope")
    func reusedBuffer() throws {
        var buffer: [UInt8] = []
        for envelope in Self.samples {
            envelope.encode(into: &buffer)
            buffer.append(UInt8(ascii: "\n"))
        }
        let lines = buffer.split(separator: UInt8(ascii: "\n"))
        #expect(lines.count == 4)
        #expect(try lines.map { try Envelope(decoding: $0) } == Self.samples)
    }

    @Test("a retention envelope has exactly the documented keys")
    func retentionLine() {
        let line = String(decoding: Self.samples[1].encoded(), as: UTF8.self)
        #expect(
            line
                == #"{"v":1,"id":"m1","app":"app_1","kind":"retention","time":"2026-06-01T10:20:30.000Z","received_at":"2026-06-01T10:20:31.000Z","clock":"skew_corrected","name":"app_open","device":"Device-XYZ","platform":"android","client_ts":"2026-06-01T08:20:30.000Z"}"#
        )
    }

    static let badLines: [(String, EnvelopeError)] = [
        ("{", .invalidJSON(message: "unexpected end of input", byteOffset: 1)),
        ("[]", .notAnObject),
        (#"{"id":"x"}"#, .missingField("v")),
        (#"{"v":2}"#, .unsupportedVersion(2)),
        (#"{"v":"1"}"#, .invalidField("v")),
        (#"{"v":1,"kind":"view"}"#, .invalidField("kind")),
        (
            #"{"v":1,"kind":"event","app":"a","time":"2026-06-01T10:20:30Z","received_at":"2026-06-01T10:20:30Z","clock":"ok"}"#,
            .missingField("id")
        ),
        (
            #"{"v":1,"id":"x","kind":"event","app":"a","time":"noon","received_at":"2026-06-01T10:20:30Z","clock":"ok"}"#,
            .invalidField("time")
        ),
        (
            #"{"v":1,"id":"x","kind":"event","app":"a","time":"2026-06-01T10:20:30Z","received_at":"2026-06-01T10:20:30Z","clock":"late"}"#,
            .invalidField("clock")
        ),
        (
            #"{"v":1,"id":"x","kind":"click","app":"a","time":"2026-06-01T10:20:30Z","received_at":"2026-06-01T10:20:30Z","clock":"ok","query":[]}"#,
            .invalidField("query")
        ),
    ]

    @Test("a damaged line is refused with the member at fault", arguments: badLines)
    func badLine(_ line: String, _ error: EnvelopeError) {
        #expect(throws: error) { try Envelope(decoding: Array(line.utf8)) }
    }

    @Test("unknown members are ignored so newer writers do not break older readers")
    func unknownMembers() throws {
        let line =
            #"{"v":1,"id":"x","app":"a","kind":"event","time":"2026-06-01T10:20:30.000Z","received_at":"2026-06-01T10:20:30.000Z","clock":"ok","future":{"a":1}}"#
        let envelope = try Envelope(decoding: Array(line.utf8))
        #expect(envelope.id == "x")
    }
}
