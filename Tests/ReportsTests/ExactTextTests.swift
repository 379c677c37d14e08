import Reports
import Testing

/// Text the database keeps apart stays apart in what Swift adds up: `String` takes canonically
/// equivalent spellings for one (`ExactText`).
@Suite struct ExactTextTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    @Test("ExactText tells apart the spellings String takes for one, and orders them after String's order")
    func exactText() {
        #expect(Self.composed == Self.decomposed)
        #expect(ExactText(Self.composed) != ExactText(Self.decomposed))
        #expect(Set([ExactText(Self.composed), ExactText(Self.decomposed), ExactText(Self.composed)]).count == 2)
        // "cafe\u{301}" (bytes 65 cc 81) before "caf\u{E9}" (c3 a9); both after "cab", before "cb".
        #expect(
            [Self.composed, "cb", Self.decomposed, "cab"].map(ExactText.init).sorted().map { Array($0.text.utf8) }
                == ["cab", Self.decomposed, Self.composed, "cb"].map { Array($0.utf8) })
    }

    @Test(
        "per-link totals keep links, UTM values and event names apart that differ only by Unicode normalisation, as the daily rows do"
    )
    func totalsKeepSpellingsApart() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a")
        let (composed, decomposed) = (Self.composed, Self.decomposed)
        fixture.click("c1", path: "/" + composed, at: "2026-06-01T10:00:00Z", campaign: composed)
        fixture.click("c2", path: "/" + decomposed, at: "2026-06-01T11:00:00Z", campaign: decomposed)
        fixture.click("c3", path: "/" + composed, at: "2026-06-02T10:00:00Z", campaign: decomposed)
        fixture.event(composed, device: "d1", at: "2026-06-01T10:05:00Z", installClick: "c1", openType: "deferred")
        fixture.event(decomposed, device: "d1", at: "2026-06-01T10:06:00Z", installClick: "c1", openType: "deferred")
        try fixture.load()
        try fixture.watermark("2026-06-03T00:00:00Z")
        let daily = try ReportService(connection: database.connection).links(
            app: "a", from: day("2026-06-01"), to: day("2026-06-02"))
        let bytes = { (text: String) in Array(text.utf8) }
        // The daily rows: two links on 06-01, one of them again on 06-02, each link's rows together.
        #expect(daily.rows.map { bytes($0.path) }.count == 3)
        let totals = try LinkTotalsReport(daily)
        // Until 2026-12-04 the totals merged both links into one row of 3 clicks over "3 days".
        #expect(totals.rows.count == 2)
        let first = try #require(totals.rows.first { bytes($0.path) == bytes("/" + composed) })
        let second = try #require(totals.rows.first { bytes($0.path) == bytes("/" + decomposed) })
        #expect(first.days == 2 && first.clicks == 2)
        #expect(second.days == 1 && second.clicks == 1)
        #expect(Set(first.events.names.map(bytes)) == [bytes(composed), bytes(decomposed)])
        #expect(Array(first.events.values) == [1, 1])
        #expect(totals.utm.count == 3 && totals.utm.allSatisfy { $0.days == 1 && $0.clicks == 1 })
    }
}
