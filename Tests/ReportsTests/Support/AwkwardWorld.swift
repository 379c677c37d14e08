import Postgres

/// Text that PostgreSQL's array output quotes or escapes, or that JSON and CSV must escape: event
/// names, paths, UTM values and funnel step names of `loadAwkwardWorld`.
let awkwardValues = [
    "a,b", #"say "hi""#, #"back\slash"#, "NULL", "{x}", "two words", "é ü", #"/p,{1}"\"#, "1,\n2", "",
]

/// The small world (`loadSmallWorld`) plus, on 2026-06-02, for each of `awkwardValues` (index i):
/// two web clicks on `/odd <value>` (one with the value as its UTM source, medium and campaign),
/// a matched install from the first, then an event named the value and a purchase (i.25 in USD,
/// EUR or JPY) from that device.
func loadAwkwardWorld(_ fixture: Fixture) throws {
    try loadSmallWorld(fixture)
    for (index, value) in awkwardValues.enumerated() {
        fixture.click(
            "k\(index)", path: "/odd " + value, at: "2026-06-02T10:0\(index):00Z",
            platform: index.isMultiple(of: 3) ? "android" : "ios", source: value,
            medium: index.isMultiple(of: 2) ? nil : value, campaign: value)
        fixture.click("k\(index)b", path: "/odd " + value, at: "2026-06-02T10:1\(index):00Z", source: "other")
        fixture.match("k\(index)", at: "2026-06-02T11:0\(index):00Z")
        fixture.event(
            value, device: "dk\(index)", at: "2026-06-02T11:0\(index):30Z", installClick: "k\(index)",
            openType: "deferred")
        fixture.event(
            "purchase", device: "dk\(index)", at: "2026-06-02T11:0\(index):40Z", installClick: "k\(index)",
            openType: "deferred",
            data: #"{"revenue":\#(index).25,"currency":"\#(["USD", "EUR", "JPY"][index % 3])"}"#)
    }
    try fixture.load()
}

/// Rewrites the attribution summary of `/x` on 2026-06-01 (app `a`) with its names in the order an
/// en_US collation's `array_agg(... ORDER BY name)` gives (not Swift's), a repeated name (read from
/// its last position) and empty maps.
func storeAttributionNamesInCollationOrder(_ connection: Connection) throws {
    try connection.execute(
        """
        UPDATE rollup_attribution_summary SET cohort_names = '{a_y,B_x,_z,B_x}', cohort_counts = '{1,2,3,4}',
            cohort_currencies = '{usd,EUR,usd}', cohort_amounts = '{1.5,2,3.25}',
            activity_names = '{b,A}', activity_counts = '{5,6}',
            activity_currencies = '{}', activity_amounts = '{}'
        WHERE app_id = 'a' AND path = '/x' AND day = '2026-06-01'
        """)
}
