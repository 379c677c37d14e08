import Testing

@testable import EventModel

@Suite struct LinkEventsTests {
    static let received: Timestamp = Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!
    static let context: RequestContext = RequestContext(appID: "app_1", receivedAt: received)
    static let click =
        #"{"click_id":"clk_1","url":"https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news&utm_campaign=spring%20sale&q=a+b","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","kind":"web","user_agent":"Mozilla/5.0","ip":"203.0.113.7","referrer":"https://news.example/"}"#
    static let match =
        #"{"click_id":"clk_1","timestamp":"2026-06-01T10:25:00.000Z","method":"probabilistic","score":900}"#

    @Test("clicks and matches are accepted with path, query and method")
    func clicksAndMatches() throws {
        let body =
            #"{"clicks":[\#(Self.click)],"matches":[\#(Self.match),{"click_id":"clk_2","timestamp":"2026-06-01T10:25:00.000Z","method":"deterministic"}]}"#
        let result = try Normalizer.linkEvents(body: Array(body.utf8), context: Self.context)
        #expect(result.rejected.isEmpty)
        #expect(result.accepted.map(\.kind) == [.click, .match, .match])
        let click = result.accepted[0]
        #expect(click.clickID == "clk_1")
        #expect(
            click.url
                == "https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news&utm_campaign=spring%20sale&q=a+b")
        #expect(click.path == "/articles/2")
        #expect(
            click.query == [
                QueryParameter(name: "utm_source", value: "news"),
                QueryParameter(name: "utm_campaign", value: "spring sale"),
                QueryParameter(name: "q", value: "a b"),
            ])
        #expect(click.platform == .ios)
        #expect(click.clickKind == .web)
        #expect(click.userAgent == "Mozilla/5.0")
        #expect(click.ip == "203.0.113.7")
        #expect(click.referrer == "https://news.example/")
        #expect(click.time == Timestamp(iso8601: "2026-06-01T10:20:30.123Z"))
        let match = result.accepted[1]
        #expect(match.method == .probabilistic)
        #expect(match.score == 900)
        #expect(result.accepted[2].method == .deterministic)
        #expect(result.accepted[2].score == nil)
        for envelope in result.accepted { #expect(try Envelope(decoding: envelope.encoded()) == envelope) }
        let line = String(decoding: match.encoded(), as: UTF8.self)
        #expect(
            line.hasSuffix(
                #""click_id":"clk_1","method":"probabilistic","score":900,"client_ts":"2026-06-01T10:25:00.000Z"}"#))
    }

    @Test("the batch form reads type click or match")
    func batchForm() throws {
        let body =
            #"{"batch":[\#(Self.click.dropLast()),"type":"click"},\#(Self.match.dropLast()),"type":"match"},\#(Self.match)]}"#
        let result = try Normalizer.linkEvents(body: Array(body.utf8), context: Self.context)
        #expect(result.accepted.map(\.kind) == [.click, .match])
        #expect(result.rejected.map(\.code) == ["missing_field"])
        #expect(result.rejected.map(\.index) == [2])
    }

    static let paths: [(String, String, [QueryParameter])] = [
        (
            "https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news", "/articles/2",
            [QueryParameter(name: "utm_source", value: "news")]
        ),
        ("https://acme.godetour.link/VnAqasAabE", "/", []),
        ("https://acme.godetour.link/VnAqasAabE/", "/", []),
        ("https://acme.godetour.link/VnAqasAabE?x=1", "/", [QueryParameter(name: "x", value: "1")]),
        ("https://acme.godetour.link", "/", []),
        ("https://acme.godetour.link/H/a/b/c/#frag?x=1", "/a/b/c/", []),
        (
            "https://links.acme.com/H/p%2Fq?a=1&a=2&b&=x&%zz=%E2%9C%93", "/p%2Fq",
            [
                QueryParameter(name: "a", value: "1"), QueryParameter(name: "b", value: ""),
                QueryParameter(name: "%zz", value: "✓"),
            ]
        ),
    ]

    @Test("the link path is what follows the app hash and query parameters are decoded", arguments: paths)
    func linkPath(_ url: String, _ path: String, _ query: [QueryParameter]) throws {
        let link = try #require(LinkURL(Array(url.utf8)))
        #expect(link.path == path)
        #expect(link.query == query)
    }

    @Test("query names are told apart by their bytes, and the first of each wins among thousands")
    func queryNamesByBytes() throws {
        // "é" as one code point and as e + combining acute: equal Strings, different bytes (and
        // different jsonb keys); the second was dropped as a repeat.
        let link = try #require(LinkURL(Array("https://a.godetour.link/H/x?caf%C3%A9=1&cafe%CC%81=2&caf%C3%A9=3".utf8)))
        #expect(link.query.map(\.value) == ["1", "2"])
        #expect(link.query.map { Array($0.name.utf8) } == [Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8)])
        let many = (0..<5_000).map { "p\($0)=\($0)" } + (0..<5_000).map { "p\($0)=again" }
        let long = try #require(LinkURL(Array(("https://a.godetour.link/H/x?" + many.joined(separator: "&")).utf8)))
        #expect(long.query.count == 5_000)
        #expect(long.query.allSatisfy { $0.value != "again" })
    }

    @Test(
        "URLs without scheme and host are refused",
        arguments: ["", "acme.godetour.link/H/x", "https:///H/x", "://h/x", "ht tp://h/x", "https://h/a\nb"])
    func badURL(_ url: String) {
        #expect(LinkURL(Array(url.utf8)) == nil)
    }

    static let rejections: [(String, String)] = [
        (
            #"{"url":"https://a.godetour.link/H/x","timestamp":"2026-06-01T10:20:30.123Z","kind":"web"}"#,
            "missing_field"
        ),
        (
            #"{"click_id":"","url":"https://a.godetour.link/H/x","timestamp":"2026-06-01T10:20:30.123Z","kind":"web"}"#,
            "invalid_click_id"
        ),
        (#"{"click_id":"c","url":"not a url","timestamp":"2026-06-01T10:20:30.123Z","kind":"web"}"#, "invalid_url"),
        (
            #"{"click_id":"c","url":"https://a.godetour.link/H/x","timestamp":"2026-06-01T10:20:30.123Z","kind":"app"}"#,
            "invalid_click_kind"
        ),
        (
            #"{"click_id":"c","url":"https://a.godetour.link/H/x","timestamp":"2026-06-01T10:20:30.123Z"}"#,
            "missing_field"
        ),
        (
            #"{"click_id":"c","url":"https://a.godetour.link/H/x","timestamp":"2026-06-01T10:20:30.123Z","kind":"web","platform":"tv"}"#,
            "invalid_platform"
        ),
        (#"{"click_id":"c","url":"https://a.godetour.link/H/x","timestamp":"soon","kind":"web"}"#, "invalid_timestamp"),
    ]

    @Test("bad clicks are rejected with stable codes", arguments: rejections)
    func clickRejection(_ click: String, _ code: String) throws {
        let result = try Normalizer.linkEvents(body: Array(#"{"clicks":[\#(click)]}"#.utf8), context: Self.context)
        #expect(result.rejected.map(\.code) == [code])
    }

    @Test("bad matches are rejected with stable codes, indexed after the clicks")
    func matchRejection() throws {
        let body =
            #"{"clicks":[\#(Self.click)],"matches":[{"click_id":"c","timestamp":"2026-06-01T10:20:30.123Z","method":"guess"},{"click_id":"c","timestamp":"2026-06-01T10:20:30.123Z","method":"deterministic","score":"high"}]}"#
        let result = try Normalizer.linkEvents(body: Array(body.utf8), context: Self.context)
        #expect(result.accepted.count == 1)
        #expect(result.rejected.map(\.code) == ["invalid_method", "invalid_type"])
        #expect(result.rejected.map(\.index) == [1, 2])
    }

    @Test("a click without platform is recorded as unknown")
    func unknownPlatform() throws {
        let body =
            #"{"clicks":[{"click_id":"c","url":"https://a.godetour.link/H","timestamp":"2026-06-01T10:20:30.123Z","kind":"universal_link"}]}"#
        let result = try Normalizer.linkEvents(body: Array(body.utf8), context: Self.context)
        #expect(result.accepted.first?.platform == .unknown)
        #expect(result.accepted.first?.clickKind == .universalLink)
        #expect(result.accepted.first?.path == "/")
    }

    @Test("each platform the link service sends is kept as sent", arguments: ["ios", "android", "desktop", "unknown"])
    func clickPlatforms(platform: String) throws {
        let body =
            #"{"clicks":[{"click_id":"c","url":"https://a.godetour.link/H/x","timestamp":"2026-06-01T10:20:30.123Z","kind":"web","platform":"\#(platform)"}]}"#
        let result = try Normalizer.linkEvents(body: Array(body.utf8), context: Self.context)
        #expect(result.rejected.isEmpty)
        #expect(result.accepted.first?.platform?.rawValue == platform)
    }

    @Test("beside a null or empty clicks or matches member the batch form is read, and beside a null batch the lists")
    func batchFormWithEmptyLists() throws {
        let body = #"{"clicks":null,"batch":[\#(Self.match.dropLast()),"type":"match"}],"matches":[]}"#
        let result = try Normalizer.linkEvents(body: Array(body.utf8), context: Self.context)
        #expect(result.accepted.map(\.kind) == [.match])
        // And the other way round: a null batch beside clicks and matches is absent too.
        let lists = #"{"batch":null,"clicks":[\#(Self.click)],"matches":[\#(Self.match)]}"#
        let read = try Normalizer.linkEvents(body: Array(lists.utf8), context: Self.context)
        #expect(read.accepted.map(\.kind) == [.click, .match])
    }

    static let bodyErrors: [(String, String)] = [
        (#"{}"#, "invalid_batch"),
        (#"{"clicks":{}}"#, "invalid_batch"),
        (#"{"clicks":[],"matches":[]}"#, "empty_batch"),
        (#"{"batch":[]}"#, "empty_batch"),
        (#"{"batch":null}"#, "invalid_batch"),
        (#"[]"#, "not_an_object"),
        // Both forms at once: reading one list would drop the other's events without a trace.
        (#"{"batch":[\#(match.dropLast()),"type":"match"}],"clicks":[\#(click)]}"#, "invalid_batch"),
        (#"{"matches":[\#(match)],"batch":[\#(match.dropLast()),"type":"match"}]}"#, "invalid_batch"),
        // A list given twice: reading the first dropped the second's events without a trace.
        (#"{"clicks":[\#(click)],"clicks":[\#(click)]}"#, "invalid_batch"),
        (#"{"clicks":[\#(click)],"matches":[],"matches":[\#(match)]}"#, "invalid_batch"),
        (#"{"batch":[\#(match.dropLast()),"type":"match"}],"batch":[]}"#, "invalid_batch"),
        (#"{"sent_at":"2026-06-01T10:20:30Z","clicks":[\#(click)],"sent_at":"2026-06-01T10:00:00Z"}"#, "invalid_batch"),
    ]

    @Test(
        "link bodies without events, with both forms, or with a member given twice refuse the request",
        arguments: bodyErrors)
    func bodyError(_ body: String, _ code: String) {
        #expect {
            _ = try Normalizer.linkEvents(body: Array(body.utf8), context: Self.context)
        } throws: { error in
            (error as? BodyError)?.code == code
        }
    }
}
