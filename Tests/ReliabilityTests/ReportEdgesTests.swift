import Foundation
import Postgres
import TestSupport
import Testing

/// The reported numbers exactly at the edges of reports.md's definitions, through the real binary:
/// a hand-checkable world posted to `serve` (SDK routes and the link route), loaded by
/// `aggregate --once` in two rounds (the second late), then read from the analyst views and the
/// report API, both compared with numbers worked out by hand from the definitions (comments).
///
/// App `edges` (UTC), around a year end:
/// - clicks /a ca1 web ios 2025-12-24T12:00:00.000 (utm news/ny) and ca2 web android 11:59:59.999;
///   /b cb1 web ios 2025-12-31T23:59:59.999, cb2 web android 2026-01-01T00:00:00.000, cb3 web desktop
///   09:00 (posted again in round 2 with another time: still one click on 01-01), cu1 universal_link
///   ios 08:00. Matches: ca1 12-31 11:59, ca2 12-31 11:59:30, cb1 01-01 00:00:00.500, cb2 01-01 00:01.
/// - dA1 ios installs 12-31T12:00:00.000 (exactly the 7-day lookback after ca1: attributed to /a);
///   app_opens 01-01T00:00:00.000 (day 1), 01-03T23:59:59.999 (day 3), 01-07T00:00:00.000 (day 7);
///   an action through cu1 exactly 7 days after install (a re-engagement of /b) and a purchase of
///   3 "gbp" through cu1.
/// - dA2 android installs at the same instant; its install click ca2 is 7 days + 1 ms before:
///   organic (not unattributable); app_open 01-01 (day 1); an action through cu1 7 days - 1 ms
///   after install (a last-touch open, not a re-engagement).
/// - dB1 ios installs 01-01T00:00:00.000, 1 ms after cb1 (click day 12-31, install day 01-01);
///   sign_up 00:10; a purchase of 9.99 USD at exactly cb1 + 7 days (funnel step 5 counts).
/// - dB2 android installs 01-01T00:02; purchases 10 USD (posted twice: one event) and "5.50" "eur"
///   (`value`), a refund of 2.5 USD (posted to /api/analytics/conversion), a sign_up 7 days + 1 ms
///   after cb2 (outside the funnel window).
/// - dO ios: app_open 01-01T10:00 (organic, unattributable); round 2 brings its app_open of 12-30,
///   which moves its install day.
///
/// App `edges-ny` (America/New_York; summer time from 2026-03-08T07:00Z, so local 03-08 is
/// 05:00Z..04:00Z next day, 23 hours): clicks /n nc1 03-08T04:59:59.999Z (local 03-07), nc2
/// 05:00:00.000Z (03-08), nc3 03-09T03:59:59.999Z (03-08), nc4 04:00:00.000Z (03-09); matches nc2
/// 03-09T03:59Z (03-08), nc3 04:00:30Z (03-09). nd2 installs 03-08T05:00:01Z (nc2), app_opens
/// 03-09T04:00:00Z (local 03-09 00:00: day 1) and 03-11T03:59:59Z (local 03-10: day 2, not day 3,
/// which it would be in UTC); nd3 installs 03-09T04:00:40Z (local 03-09, nc3 41 s earlier).
@Suite(.serialized)
struct ReportEdgesTests {
    @Test("windows, day boundaries, duplicates and late data count exactly as reports.md defines them")
    func edges() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-report-edges")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let utc = try AppKeys.create(id: "edges", environment: environment)
        let ny = try AppKeys.create(id: "edges-ny", timeZone: "America/New_York", environment: environment)

        var server = try ServeProcess(environment: environment)
        func send(_ route: String, _ app: AppKeys, _ body: String) throws {
            let key = route == "/api/link/events" ? app.secret : app.publishable
            let answer = try server.post(route, key: key, app: app.id, body: body)
            #expect(
                answer.status == 200 && ((answer.json?["rejected"] as? [Any]) ?? []).isEmpty,
                "\(route) \(body): \(answer.status) \(answer.text.prefix(500))")
        }
        func click(_ id: String, _ path: String, _ time: String, _ platform: String, _ kind: String = "web") -> String {
            #"{"click_id":"\#(id)","url":"https://acme.godetour.link/VnAqasAabE\#(path)","timestamp":"\#(time)","platform":"\#(platform)","kind":"\#(kind)"}"#
        }
        func match(_ id: String, _ time: String) -> String {
            #"{"click_id":"\#(id)","timestamp":"\#(time)","method":"deterministic"}"#
        }
        func open(_ app: AppKeys, _ device: String, _ time: String, _ platform: String) throws {
            try send(
                "/api/analytics/retention", app,
                #"{"event_name":"app_open","timestamp":"\#(time)","platform":"\#(platform)","device_id":"\#(device)"}"#)
        }
        func action(
            _ app: AppKeys, _ device: String, _ name: String, _ time: String, _ platform: String,
            attribution: String, data: String? = nil
        ) throws {
            let data = data.map { #","data":\#($0)"# } ?? ""
            try send(
                "/api/analytics/event", app,
                #"{"event_name":"\#(name)","timestamp":"\#(time)","platform":"\#(platform)","device_id":"\#(device)","attribution":\#(attribution)\#(data)}"#
            )
        }
        let dA1 = "0a000000-0000-4000-8000-0000000000a1", dA2 = "0a000000-0000-4000-8000-0000000000a2"
        let dB1 = "0b000000-0000-4000-8000-0000000000b1", dB2 = "0b000000-0000-4000-8000-0000000000b2"
        let dO = "0c000000-0000-4000-8000-00000000000c"
        let nd2 = "0d000000-0000-4000-8000-0000000000d2", nd3 = "0d000000-0000-4000-8000-0000000000d3"

        let clicks = [
            click("ca1", "/a?utm_source=news&utm_campaign=ny", "2025-12-24T12:00:00.000Z", "ios"),
            click("ca2", "/a", "2025-12-24T11:59:59.999Z", "android"),
            click("cb1", "/b", "2025-12-31T23:59:59.999Z", "ios"),
            click("cb2", "/b?utm_source=mail", "2026-01-01T00:00:00.000Z", "android"),
            click("cb3", "/b", "2026-01-01T09:00:00.000Z", "desktop"),
            click("cu1", "/b", "2026-01-01T08:00:00.000Z", "ios", "universal_link"),
        ]
        let matches = [
            match("ca1", "2025-12-31T11:59:00.000Z"), match("ca2", "2025-12-31T11:59:30.000Z"),
            match("cb1", "2026-01-01T00:00:00.500Z"), match("cb2", "2026-01-01T00:01:00.000Z"),
        ]
        try send(
            "/api/link/events", utc,
            #"{"clicks":[\#(clicks.joined(separator: ","))],"matches":[\#(matches.joined(separator: ","))]}"#)
        let nyClicks = [
            click("nc1", "/n", "2026-03-08T04:59:59.999Z", "ios"),
            click("nc2", "/n", "2026-03-08T05:00:00.000Z", "ios"),
            click("nc3", "/n", "2026-03-09T03:59:59.999Z", "android"),
            click("nc4", "/n", "2026-03-09T04:00:00.000Z", "android"),
        ]
        let nyMatches = [match("nc2", "2026-03-09T03:59:00.000Z"), match("nc3", "2026-03-09T04:00:30.000Z")]
        try send(
            "/api/link/events", ny,
            #"{"clicks":[\#(nyClicks.joined(separator: ","))],"matches":[\#(nyMatches.joined(separator: ","))]}"#)

        let deferred = #"{"install_click_id":"ca1","open_type":"deferred"}"#
        try open(utc, dA1, "2025-12-31T12:00:00.000Z", "ios")
        try action(utc, dA1, "sign_up", "2025-12-31T12:05:00.000Z", "ios", attribution: deferred)
        try open(utc, dA1, "2026-01-01T00:00:00.000Z", "ios")
        try open(utc, dA1, "2026-01-03T23:59:59.999Z", "ios")
        try open(utc, dA1, "2026-01-07T00:00:00.000Z", "ios")
        let throughCU1 = #"{"install_click_id":"ca1","open_click_id":"cu1","open_type":"verified"}"#
        try action(utc, dA1, "view_item", "2026-01-07T12:00:00.000Z", "ios", attribution: throughCU1)
        try action(
            utc, dA1, "purchase", "2026-01-07T12:01:00.000Z", "ios", attribution: throughCU1,
            data: #"{"revenue":3,"currency":"gbp"}"#)
        try open(utc, dA2, "2025-12-31T12:00:00.000Z", "android")
        try action(
            utc, dA2, "add_to_cart", "2025-12-31T12:10:00.000Z", "android",
            attribution: #"{"install_click_id":"ca2","open_type":"deferred"}"#)
        try open(utc, dA2, "2026-01-01T00:00:00.000Z", "android")
        try action(
            utc, dA2, "share", "2026-01-07T11:59:59.999Z", "android",
            attribution: #"{"open_click_id":"cu1","open_type":"verified"}"#)
        let viaCB1 = #"{"install_click_id":"cb1","open_type":"deferred"}"#
        try open(utc, dB1, "2026-01-01T00:00:00.000Z", "ios")
        try action(utc, dB1, "sign_up", "2026-01-01T00:10:00.000Z", "ios", attribution: viaCB1)
        try action(
            utc, dB1, "purchase", "2026-01-07T23:59:59.999Z", "ios", attribution: viaCB1,
            data: #"{"revenue":9.99,"currency":"USD"}"#)
        let viaCB2 = #"{"install_click_id":"cb2","open_type":"deferred"}"#
        try open(utc, dB2, "2026-01-01T00:02:00.000Z", "android")
        for _ in 0..<2 {  // an SDK's repeated post: one event
            try action(
                utc, dB2, "purchase", "2026-01-01T01:00:00.000Z", "android", attribution: viaCB2,
                data: #"{"revenue":10,"currency":"USD"}"#)
        }
        try action(
            utc, dB2, "purchase", "2026-01-01T01:30:00.000Z", "android", attribution: viaCB2,
            data: #"{"value":"5.50","currency":"eur"}"#)
        // The refund as a later React Native SDK posts it: to /conversion, its amount at the top level.
        try send(
            "/api/analytics/conversion", utc,
            #"{"event_name":"refund","revenue":2.5,"currency":"USD","timestamp":"2026-01-01T02:00:00.000Z","#
                + #""platform":"android","device_id":"\#(dB2)","attribution":\#(viaCB2)}"#)
        try action(utc, dB2, "sign_up", "2026-01-08T00:00:00.001Z", "android", attribution: viaCB2)
        try open(utc, dO, "2026-01-01T10:00:00.000Z", "ios")
        try open(ny, nd2, "2026-03-08T05:00:01.000Z", "ios")
        try action(
            ny, nd2, "sign_up", "2026-03-08T05:01:01.000Z", "ios",
            attribution: #"{"install_click_id":"nc2","open_type":"deferred"}"#)
        try open(ny, nd2, "2026-03-09T04:00:00.000Z", "ios")
        try open(ny, nd2, "2026-03-11T03:59:59.000Z", "ios")
        try open(ny, nd3, "2026-03-09T04:00:40.000Z", "android")
        try action(
            ny, nd3, "sign_up", "2026-03-09T04:01:00.000Z", "android",
            attribution: #"{"install_click_id":"nc3","open_type":"deferred"}"#)
        #expect(server.stop() == 0)
        var aggregate = try Binary.run(["aggregate", "--once"], environment: environment, timeout: .seconds(180))
        #expect(aggregate.status == 0, "aggregate --once: \(aggregate.errors.suffix(2000))")

        // Round 2, late: cb3 again with another time, and dO's older app_open (install 01-01 -> 12-30).
        server = try ServeProcess(environment: environment)
        try send(
            "/api/link/events", utc, #"{"clicks":[\#(click("cb3", "/b", "2026-01-02T09:00:00.000Z", "desktop"))]}"#)
        try open(utc, dO, "2025-12-30T10:00:00.000Z", "ios")
        #expect(server.stop() == 0)
        aggregate = try Binary.run(["aggregate", "--once"], environment: environment, timeout: .seconds(180))
        #expect(aggregate.status == 0, "aggregate --once: \(aggregate.errors.suffix(2000))")

        let connection = try database.connect()
        defer { connection.close() }
        func lines(_ sql: SQL) throws -> [String] {
            try connection.query(sql).map { try $0["line", as: String.self] }
        }
        server = try ServeProcess(environment: environment)
        defer { _ = server.stop() }
        let reports = (
            utc: ReportClient(port: server.port, app: utc), ny: ReportClient(port: server.port, app: ny)
        )
        func table(_ client: ReportClient, _ kind: String, _ name: String, _ range: String) throws -> [[String: Any]] {
            try client.json(kind, range).tables[name] ?? []
        }
        let utcRange = "from=2025-12-20&to=2026-01-15", nyRange = "from=2026-03-01&to=2026-03-20"

        // Per link and day: path, day, clicks, universal-link opens, matched, attributed, install rate,
        // re-engagements (rows with one of those non-zero).
        let links = [
            "edges /a 2025-12-24 2 0 0 0 0 0",  // ca1 and ca2; no match that day
            "edges /a 2025-12-31 0 0 2 1 - 0",  // both matches; only dA1 (lookback exactly 7 days) attributed
            "edges /b 2025-12-31 1 0 0 0 0 0",  // cb1 at 23:59:59.999; its match is on 01-01
            "edges /b 2026-01-01 2 1 2 2 1 0",  // cb2, cb3 (once) and cu1; cb1's and cb2's matches; dB1, dB2
            "edges /b 2026-01-07 0 0 0 0 - 1",  // dA1 exactly 7 days after install; dA2 1 ms short
            "edges-ny /n 2026-03-07 1 0 0 0 0 0", "edges-ny /n 2026-03-08 2 0 1 1 0.5 0",
            "edges-ny /n 2026-03-09 1 0 1 1 1 0",
        ]
        #expect(
            try lines(
                """
                SELECT concat_ws(' ', app_id, path, day, clicks, universal_link_opens, matched_installs,
                                 attributed_installs, coalesce(trim_scale(install_rate)::text, '-'), reengagements) AS line
                FROM report_link_daily ORDER BY app_id, path, day
                """) == links)
        var served: [String] = []
        for (client, range) in [(reports.utc, utcRange), (reports.ny, nyRange)] {
            for row in try table(client, "links", "links", range) {
                let counts = [
                    "clicks", "universal_link_opens", "matched_installs", "attributed_installs", "reengagements",
                ]
                .map { row[$0] as? Int ?? -1 }
                guard counts.contains(where: { $0 != 0 }) else { continue }
                served.append(
                    "\(client.app.id) \(row["path"]!) \(row["day"]!) \(counts[0..<4].map(String.init).joined(separator: " ")) "
                        + "\(Self.number(row["install_rate"])) \(counts[4])")
            }
        }
        #expect(served == links, "the API's links")

        // Actions of attributed devices by name, and revenue per currency (purchase minus refund).
        let events = [
            "/a 2025-12-31 sign_up 1", "/a 2026-01-07 purchase 1", "/a 2026-01-07 view_item 1",
            "/b 2026-01-01 purchase 2", "/b 2026-01-01 refund 1", "/b 2026-01-01 sign_up 1", "/b 2026-01-07 purchase 1",
            "/b 2026-01-08 sign_up 1",
        ]
        let revenue = [
            "/a 2026-01-07 GBP 3", "/b 2026-01-01 EUR 5.50", "/b 2026-01-01 USD 7.5", "/b 2026-01-07 USD 9.99",
        ]
        #expect(
            try lines(
                """
                SELECT concat_ws(' ', path, day, name, events) AS line FROM report_link_daily_events
                WHERE app_id = 'edges' AND kind = 'event' ORDER BY path, day, name
                """) == events)
        #expect(
            try lines(
                """
                SELECT concat_ws(' ', path, day, currency, revenue) AS line FROM report_link_daily_revenue
                WHERE app_id = 'edges' ORDER BY path, day, currency
                """) == revenue)
        let linkRows = try table(reports.utc, "links", "links", utcRange)
        #expect(
            linkRows.flatMap { row in
                ((row["events"] as? [String: Int]) ?? [:]).sorted { $0.key < $1.key }.map {
                    "\(row["path"]!) \(row["day"]!) \($0.key) \($0.value)"
                }
            } == events, "the API's events")
        #expect(
            linkRows.flatMap { row in
                ((row["revenue"] as? [String: String]) ?? [:]).sorted { $0.key < $1.key }.map {
                    "\(row["path"]!) \(row["day"]!) \($0.key) \($0.value)"
                }
            } == revenue, "the API's revenue")

        // Installs per install day: installs, attributed, organic, unattributable.
        let installs = [
            "edges 2025-12-30 1 0 1 1",  // dO, moved here by its late older app_open
            "edges 2025-12-31 2 1 1 0",  // dA1 attributed; dA2 organic but sent attribution
            "edges 2026-01-01 2 2 0 0",  // dB1, dB2
            "edges-ny 2026-03-08 1 1 0 0", "edges-ny 2026-03-09 1 1 0 0",
        ]
        #expect(
            try lines(
                """
                SELECT concat_ws(' ', app_id, day, installs, attributed_installs, organic_installs,
                                 unattributable_installs) AS line
                FROM report_installs_daily ORDER BY app_id, day
                """) == installs)
        served = []
        for (client, range) in [(reports.utc, utcRange), (reports.ny, nyRange)] {
            for row in try table(client, "attribution", "installs", range) {
                let counts = ["installs", "attributed_installs", "organic_installs", "unattributable_installs"]
                    .map { String(row[$0] as? Int ?? -1) }
                served.append("\(client.app.id) \(row["day"]!) \(counts.joined(separator: " "))")
            }
        }
        #expect(served == installs, "the API's installs")
        // Last-touch opens: dA1's two actions and dA2's one through cu1.
        #expect(
            try lines(
                "SELECT concat_ws(' ', path, day, last_touch_opens) AS line FROM report_attribution WHERE last_touch_opens > 0"
            ) == ["/b 2026-01-07 3"])

        // The default funnel per cohort (click day): devices per step, then the medians from the
        // previous step in seconds.
        let funnel = [
            "edges /a 2025-12-24 2,1,1,0,0 -,604800,0,-,-",  // dA1 installs exactly 7 days after ca1
            "edges /b 2025-12-31 1,1,1,1,1 -,0.001,0,600,604199.999",  // dB1's purchase at cb1 + 7 days
            "edges /b 2026-01-01 2,1,1,0,0 -,120,0,-,-",  // dB2's sign-up 1 ms past the window
            "edges-ny /n 2026-03-07 1,0,0,0,0 -,-,-,-,-",
            "edges-ny /n 2026-03-08 2,2,2,2,0 -,20.5005,0,40,-",  // install medians of 1 s and 40.001 s
            "edges-ny /n 2026-03-09 1,0,0,0,0 -,-,-,-,-",
        ]
        #expect(
            try lines(
                """
                SELECT concat_ws(' ', app_id, path, day, string_agg(devices::text, ',' ORDER BY step),
                                 string_agg(coalesce(trim_scale(median_seconds_from_previous)::text, '-'), ',' ORDER BY step))
                       AS line
                FROM report_funnel WHERE funnel_id = 'default' GROUP BY app_id, path, day ORDER BY app_id, path, day
                """) == funnel)
        served = []
        for (client, range) in [(reports.utc, utcRange), (reports.ny, nyRange)] {
            let rows = try table(client, "funnel", "funnel", range).filter { $0["funnel_id"] as? String == "default" }
            var groups: [String: [[String: Any]]] = [:]
            for row in rows { groups["\(row["path"]!) \(row["day"]!)", default: []].append(row) }
            for (key, steps) in groups.sorted(by: { $0.key < $1.key }) {
                let ordered = steps.sorted { ($0["step"] as? Int ?? 0) < ($1["step"] as? Int ?? 0) }
                let devices = ordered.map { String($0["devices"] as? Int ?? -1) }.joined(separator: ",")
                let medians = ordered.map { Self.number($0["median_seconds_from_previous"]) }.joined(separator: ",")
                served.append("\(client.app.id) \(key) \(devices) \(medians)")
            }
        }
        #expect(served == funnel, "the API's funnel")

        // Retention per cohort: size, d1, d3, d7, d14, d30 ('-' = not reached: the newest event is
        // 2026-01-08 in edges, local 2026-03-10 in edges-ny).
        let retention = [
            "edges - 2025-12-30 1 0 0 0 - -", "edges - 2025-12-31 1 1 0 0 - -",  // dO; dA2
            "edges /a 2025-12-31 1 1 1 1 - -",  // dA1 at 00:00:00.000 and 23:59:59.999
            "edges /b 2026-01-01 2 0 0 0 - -",
            "edges-ny /n 2026-03-08 1 1 - - - -",  // nd2: local 03-09 00:00 is day 1, 03-10 23:59 day 2
            "edges-ny /n 2026-03-09 1 0 - - - -",
        ]
        #expect(
            try lines(
                """
                SELECT concat_ws(' ', app_id, coalesce(path, '-'), cohort_day, cohort_size, coalesce(d1::text, '-'),
                                 coalesce(d3::text, '-'), coalesce(d7::text, '-'), coalesce(d14::text, '-'),
                                 coalesce(d30::text, '-')) AS line
                FROM report_retention ORDER BY app_id, path NULLS FIRST, cohort_day
                """) == retention)
        served = []
        for (client, range) in [(reports.utc, utcRange), (reports.ny, nyRange)] {
            for row in try table(client, "retention", "retention", range) {
                let days = ["cohort_size", "d1", "d3", "d7", "d14", "d30"].map {
                    (row[$0] as? Int).map(String.init) ?? "-"
                }
                served.append(
                    "\(client.app.id) \((row["path"] as? String) ?? "-") \(row["cohort_day"]!) \(days.joined(separator: " "))"
                )
            }
        }
        #expect(served.sorted() == retention.sorted(), "the API's retention")
    }

    /// A JSON or numeric-text number as the tests write it (`-` for null), without trailing zeros.
    static func number(_ value: Any?) -> String {
        guard let value, !(value is NSNull) else { return "-" }
        let text = "\(value)"
        guard text.contains(".") else { return text }
        let trimmed = text.reversed().drop { $0 == "0" }.reversed()
        return trimmed.last == "." ? String(trimmed.dropLast()) : String(trimmed)
    }
}
