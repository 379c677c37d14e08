/// The hand-computed world most report tests use (app `a`, UTC):
///
/// 2026-06-01
///   c1 web click /x ios utm_source=news 10:00, matched 10:05
///   c2 web click /x android 11:00, matched 11:30
///   c3 universal_link /y ios 12:00;  c4 web click /y desktop 13:00
///   d1 ios (newest SDK): app_open 10:06 (install), sign_up 10:07 + purchase 29.99 USD 11:07
///      + purchase 10 EUR 12:00, all with install_click_id c1
///   d2 android: app_open 11:31 (install), add_to_cart 11:40 with install_click_id c2
///   d3 ios (no attribution object ever): app_open 09:00  → organic, unattributable
///   d4 ios: app_open 08:00, view_item 08:05 with open_type organic  → organic
/// 2026-06-02: d1 app_open 09:00 (day 1 return); d2 refund 5.50 USD (install click c2);
///             d4 view_item opened through c3 (< 7 days after install: last touch, no re-engagement)
/// 2026-06-09: d1 view_item opened through c3 on /y, 8 days after install: a re-engagement of /y
/// Watermark 2026-06-05T12:00Z: days 1 and 3 reached, 7 and later not.
func loadSmallWorld(_ fixture: Fixture) throws {
    try fixture.app("a")
    fixture.click("c1", path: "/x", at: "2026-06-01T10:00:00Z", platform: "ios", source: "news")
    fixture.click("c2", path: "/x", at: "2026-06-01T11:00:00Z", platform: "android")
    fixture.click("c3", path: "/y", at: "2026-06-01T12:00:00Z", kind: "universal_link", platform: "ios")
    fixture.click("c4", path: "/y", at: "2026-06-01T13:00:00Z", platform: "desktop")
    fixture.match("c1", at: "2026-06-01T10:05:00Z")
    fixture.match("c2", at: "2026-06-01T11:30:00Z")
    fixture.event("app_open", device: "d1", at: "2026-06-01T10:06:00Z", kind: "retention")
    fixture.event("sign_up", device: "d1", at: "2026-06-01T10:07:00Z", installClick: "c1", openType: "deferred")
    fixture.event(
        "purchase", device: "d1", at: "2026-06-01T11:07:00Z", installClick: "c1", openType: "deferred",
        data: #"{"revenue":29.99,"currency":"USD"}"#)
    fixture.event(
        "purchase", device: "d1", at: "2026-06-01T12:00:00Z", installClick: "c1", openType: "deferred",
        data: #"{"value":10,"currency":"eur"}"#)
    fixture.event("app_open", device: "d2", at: "2026-06-01T11:31:00Z", kind: "retention", platform: "android")
    fixture.event(
        "add_to_cart", device: "d2", at: "2026-06-01T11:40:00Z", platform: "android", installClick: "c2",
        openType: "deferred")
    fixture.event("app_open", device: "d3", at: "2026-06-01T09:00:00Z", kind: "retention")
    fixture.event("app_open", device: "d4", at: "2026-06-01T08:00:00Z", kind: "retention")
    fixture.event("view_item", device: "d4", at: "2026-06-01T08:05:00Z", openType: "organic")
    try fixture.load()
    fixture.event("app_open", device: "d1", at: "2026-06-02T09:00:00Z", kind: "retention")
    fixture.event(
        "refund", device: "d2", at: "2026-06-02T10:00:00Z", platform: "android", installClick: "c2",
        openType: "deferred", data: #"{"revenue":"5.50","currency":"USD"}"#)
    fixture.event("view_item", device: "d4", at: "2026-06-02T10:00:00Z", openClick: "c3", openType: "verified")
    try fixture.load()
    fixture.event(
        "view_item", device: "d1", at: "2026-06-09T10:00:00Z", installClick: "c1", openClick: "c3",
        openType: "verified")
    try fixture.load()
    try fixture.watermark("2026-06-05T12:00:00Z")
}
