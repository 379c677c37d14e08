import Foundation
import Postgres
import Reports
import TestSupport
import Testing

@Suite struct LinkReportTests {
    @Test("per-link daily report: clicks, matches, attributed installs, platform splits, events, revenue")
    func linkDaily() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let report = try ReportService(connection: database.connection).links(
            app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        #expect(report.watermark == "2026-06-05T12:00:00.000000Z")
        #expect(
            report.rows.map { "\($0.path) \($0.day)" } == [
                "/x 2026-06-01", "/x 2026-06-02", "/x 2026-06-09", "/y 2026-06-01", "/y 2026-06-09",
            ])
        let x1 = report.rows[0]
        #expect(x1.clicks == 2 && x1.universalLinkOpens == 0 && x1.matchedInstalls == 2 && x1.attributedInstalls == 2)
        #expect(x1.installRate == "1.000000")
        #expect(x1.reengagements == 0)
        #expect(x1.ios.clicks == 1 && x1.android.clicks == 1)
        #expect(x1.ios.matchedInstalls == 1 && x1.android.matchedInstalls == 1)
        #expect(x1.ios.attributedInstalls == 1 && x1.android.attributedInstalls == 1)
        #expect(x1.events == ["sign_up": 1, "purchase": 2, "add_to_cart": 1])
        #expect(x1.retentionEvents == ["app_open": 2])
        #expect(x1.revenue == ["USD": "29.99", "EUR": "10"])
        // Events and revenue split by the device's platform, with the total's names and currencies.
        #expect(x1.ios.events == ["sign_up": 1, "purchase": 2, "add_to_cart": 0])
        #expect(x1.android.events == ["sign_up": 0, "purchase": 0, "add_to_cart": 1])
        #expect(x1.ios.retentionEvents == ["app_open": 1] && x1.android.retentionEvents == ["app_open": 1])
        #expect(x1.ios.revenue == ["USD": "29.99", "EUR": "10"])
        #expect(x1.android.revenue == ["USD": "0", "EUR": "0"])

        let x2 = report.rows[1]
        #expect(x2.clicks == 0 && x2.installRate == nil)
        #expect(x2.events == ["refund": 1])
        #expect(x2.retentionEvents == ["app_open": 1])
        #expect(x2.revenue == ["USD": "-5.50"])
        #expect(x2.android.events == ["refund": 1] && x2.ios.events == ["refund": 0])
        #expect(x2.android.revenue == ["USD": "-5.50"] && x2.ios.revenue == ["USD": "0"])

        let x9 = report.rows[2]
        #expect(x9.events == ["view_item": 1])
        #expect(x9.reengagements == 0)

        let y1 = report.rows[3]
        #expect(y1.clicks == 1 && y1.universalLinkOpens == 1 && y1.matchedInstalls == 0 && y1.attributedInstalls == 0)
        #expect(y1.ios.universalLinkOpens == 1 && y1.ios.clicks == 0 && y1.android.clicks == 0)
        #expect(y1.installRate == "0.000000")

        let y9 = report.rows[4]
        #expect(y9.reengagements == 1 && y9.ios.reengagements == 1)
        #expect(y9.events.isEmpty)

        #expect(
            report.utm.map { "\($0.path) \($0.day) \($0.source ?? "-") \($0.clicks) \($0.matchedInstalls)" } == [
                "/x 2026-06-01 - 1 1", "/x 2026-06-01 news 1 1", "/y 2026-06-01 - 1 0",
            ])
        #expect(report.utm.map(\.installRate) == ["1.000000", "1.000000", "0.000000"])
        // The compact read (report_link_summary) is the report the four per-link views give.
        #expect(
            report
                == (try ReportService(connection: database.connection).linksFromViews(
                    app: "a", from: day("2026-06-01"), to: day("2026-06-30"))))
    }

    @Test("sql/066 gives summary rows written before it their events' and revenue's platform splits")
    func platformSplitsBackfilled() throws {
        let db = try TestDatabase.make(migrate: false)
        defer { db.drop() }
        let connection = try db.connect()
        defer { connection.close() }
        // The schema as the previous release left it: every migration before 066, then data.
        let before = NSTemporaryDirectory() + "detour-sql-before-066-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: before, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: before) }
        let sqlDirectory = RepositoryRoot.path + "/sql"
        for file in try FileManager.default.contentsOfDirectory(atPath: sqlDirectory) where file < "066" {
            try FileManager.default.copyItem(atPath: sqlDirectory + "/" + file, toPath: before + "/" + file)
        }
        try Migrator(directory: before).migrate(connection)
        try loadSmallWorld(Fixture(connection))
        let linesQuery: SQL = "SELECT line FROM report_link_summary_lines ORDER BY line"
        let linesBefore = try connection.query(linesQuery).map { try $0["line", as: String.self] }
        #expect(try Migrator(directory: sqlDirectory).migrate(connection).first == "066_link_summary_platform_splits")
        // What a binary from before 066 reads is unchanged (it checks each line's end).
        #expect(try connection.query(linesQuery).map { try $0["line", as: String.self] } == linesBefore)
        #expect(linesBefore.count == 5)

        let service = ReportService(connection: connection)
        let report = try service.links(app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        let x1 = try #require(report.rows.first)
        #expect(x1.ios.events == ["sign_up": 1, "purchase": 2, "add_to_cart": 0])
        #expect(x1.android.revenue == ["USD": "0", "EUR": "0"])
        #expect(report == (try service.linksFromViews(app: "a", from: day("2026-06-01"), to: day("2026-06-30"))))
    }

    @Test("attribution: installs by kind, cohort and activity actions and revenue, last-touch opens")
    func attribution() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let report = try ReportService(connection: database.connection).attribution(
            app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        let rows = Dictionary(uniqueKeysWithValues: report.rows.map { ("\($0.path) \($0.day)", $0) })
        let x1 = try #require(rows["/x 2026-06-01"])
        #expect(x1.matchedInstalls == 2 && x1.attributedInstalls == 2)
        #expect(x1.cohortActions == 6)  // d1: sign_up, 2 purchases, view_item; d2: add_to_cart, refund
        #expect(x1.activityActions == 4)
        #expect(x1.cohortEvents == ["sign_up": 1, "purchase": 2, "view_item": 1, "add_to_cart": 1, "refund": 1])
        #expect(x1.cohortRevenue == ["USD": "24.49", "EUR": "10"])
        #expect(x1.activityRevenue == ["USD": "29.99", "EUR": "10"])
        #expect(rows["/x 2026-06-02"]?.activityRevenue == ["USD": "-5.50"])
        #expect(rows["/x 2026-06-02"]?.cohortActions == 0)
        #expect(rows["/y 2026-06-02"]?.lastTouchOpens == 1)
        #expect(rows["/y 2026-06-09"]?.lastTouchOpens == 1)
        // The compact read (report_attribution_summary) is the report the attribution views give.
        #expect(
            report
                == (try ReportService(connection: database.connection).attributionFromViews(
                    app: "a", from: day("2026-06-01"), to: day("2026-06-30"))))
        #expect(
            report.installs == [
                InstallsRow(
                    day: day("2026-06-01"), installs: 4, attributedInstalls: 2, organicInstalls: 2,
                    unattributableInstalls: 1)
            ])
    }

    @Test("the default funnel counts steps in order with exact medians")
    func defaultFunnel() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let report = try ReportService(connection: database.connection).funnel(
            app: "a", from: day("2026-06-01"), to: day("2026-06-01"))
        let x = report.rows.filter { $0.path == "/x" }
        #expect(x.map(\.stepName) == ["click", "install", "app_open", "sign_up", "purchase"])
        #expect(x.map(\.devices) == [2, 2, 2, 1, 1])
        // install - click: 360 s and 1860 s, the median of an even count is their mean
        #expect(x.map(\.medianSecondsFromPrevious) == [nil, "1110", "0", "60", "3600"])
        #expect(x.map(\.conversionFromPrevious) == [nil, "1.000000", "1.000000", "0.500000", "1.000000"])
        #expect(x.map(\.conversionOverall) == ["1.000000", "1.000000", "1.000000", "0.500000", "0.500000"])
        // The compact read (report_funnel_summary) is the report report_funnel gives.
        #expect(
            report
                == (try ReportService(connection: database.connection).funnelFromViews(
                    app: "a", from: day("2026-06-01"), to: day("2026-06-01"))))
        let y = report.rows.filter { $0.path == "/y" }
        #expect(y.map(\.devices) == [1, 0, 0, 0, 0])
        #expect(y.map(\.medianSecondsFromPrevious) == [nil, nil, nil, nil, nil])
    }

    @Test("retention counts exact-day returns and is null for days the cohort has not reached")
    func retention() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let report = try ReportService(connection: database.connection).retention(
            app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        #expect(report.rows.count == 2)
        let x = report.rows[0]
        #expect(x.path == "/x" && x.cohortSize == 2)
        #expect(x.retained == [1, 0, nil, nil, nil])
        #expect(x.rates == ["0.500000", "0.000000", nil, nil, nil])
        let organic = report.rows[1]
        #expect(organic.path == nil && organic.cohortSize == 2)
        #expect(organic.retained == [0, 0, nil, nil, nil])

        // A watermark far beyond the data (a history loaded later): days after the app's newest
        // event (06-09) stay null rather than turning into zeros.
        try Fixture(database.connection).watermark("2026-11-29T00:00:00Z")
        let later = try ReportService(connection: database.connection).retention(
            app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        #expect(later.rows[0].retained == [1, 0, 0, nil, nil])
        #expect(
            later
                == (try ReportService(connection: database.connection).retentionFromViews(
                    app: "a", from: day("2026-06-01"), to: day("2026-06-30"))))
    }

    /// Day N is reported once it is over in the app's time zone (the watermark is on a later local
    /// day) and the app's data reaches it. Until sql/071 a day counted as reached once it had begun,
    /// so the daily report run just after midnight printed the newest cohort's d1 as a final 0.
    @Test("a retention day still going on is null until it is over in the app's time zone")
    func retentionDayInProgress() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a")
        try fixture.app("la", timeZone: "America/Los_Angeles")
        for app in ["a", "la"] {
            // Installed on 06-04 (local), back on 06-05 (day 1) in both zones.
            fixture.event("app_open", device: "d1", app: app, at: "2026-06-04T18:00:00Z", kind: "retention")
            fixture.event("app_open", device: "d1", app: app, at: "2026-06-05T18:00:00Z", kind: "retention")
        }
        try fixture.load()
        func retained(_ app: String) throws -> [Int?] {
            let service = ReportService(connection: database.connection)
            let report = try service.retention(app: app, from: day("2026-06-04"), to: day("2026-06-04"))
            #expect(
                report == (try service.retentionFromViews(app: app, from: day("2026-06-04"), to: day("2026-06-04"))))
            return report.rows.first?.retained ?? []
        }
        // 06-05 is under way (and the open at 18:00 is loaded): no final number for day 1 yet.
        try fixture.watermark("2026-06-05T20:00:00Z")
        #expect(try retained("a") == [nil, nil, nil, nil, nil])
        // Past midnight UTC: day 1 is over for the UTC app; in Los Angeles it is 06-05 17:00.
        try fixture.watermark("2026-06-06T00:00:00Z")
        #expect(try retained("a") == [1, nil, nil, nil, nil])
        #expect(try retained("la") == [nil, nil, nil, nil, nil])
        // The days the rule compares, for analysts: in Los Angeles both are still 06-05.
        let reach = try database.connection.query(
            "SELECT watermark_day::text AS w, data_day::text AS d FROM report_retention_reach WHERE app_id = 'la'")
        #expect(
            try reach.first.map { [try $0["w", as: String.self], try $0["d", as: String.self]] } == [
                "2026-06-05", "2026-06-05",
            ])
        try fixture.watermark("2026-06-06T07:00:00Z")
        #expect(try retained("la") == [1, nil, nil, nil, nil])
        // Days later, with nothing new from the app: the days its data reaches are reported, day 3
        // (06-07, after its newest event) stays null rather than 0.
        try fixture.watermark("2026-06-09T00:00:00Z")
        #expect(try retained("a") == [1, nil, nil, nil, nil])
    }

    /// With several ingest nodes, day N is over once every node is loaded past it (sql/077): until
    /// then a node behind may still hold app_opens of day N. Until sql/077 the newest node's
    /// watermark decided, and day 1 was reported as a final 0, then grew.
    @Test("a retention day is null until every ingest node is loaded past it")
    func retentionWaitsForEveryNode() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a")
        fixture.event("app_open", device: "d1", at: "2026-06-04T18:00:00Z", kind: "retention")
        // The app's loaded data reaches 06-05 (another device, from node-1).
        fixture.event("app_open", device: "d2", at: "2026-06-05T10:00:00Z", kind: "retention")
        try fixture.load()
        func retained() throws -> [Int?] {
            try ReportService(connection: database.connection)
                .retention(app: "a", from: day("2026-06-04"), to: day("2026-06-04")).rows.first?.retained ?? []
        }
        // node-1 is loaded past 06-05; node-2 only to 06-05 12:00, and holds d1's open of 18:00.
        try fixture.caughtUp("2026-06-06T00:05:00Z", node: "node-1", newestReceivedAt: "2026-06-06T00:05:00Z")
        try fixture.caughtUp("2026-06-05T12:00:00Z", node: "node-2", newestReceivedAt: "2026-06-05T12:00:00Z")
        #expect(try retained() == [nil, nil, nil, nil, nil])
        // node-2's segments are loaded: the open is in, and the node is read past the day.
        fixture.event("app_open", device: "d1", at: "2026-06-05T18:00:00Z", kind: "retention")
        try fixture.load()
        try fixture.caughtUp("2026-06-06T00:10:00Z", node: "node-2")
        #expect(try retained() == [1, nil, nil, nil, nil])
    }
}

@Suite struct SummaryDecodingTests {
    @Test("event names with commas, quotes, backslashes, braces, spaces or NULL survive the compact reads")
    func awkwardNames() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try loadSmallWorld(fixture)
        let names = ["a,b", #"say "hi""#, #"back\slash"#, "NULL", "{x}", "two words", "", "é ü"]
        for (index, name) in names.enumerated() {
            fixture.event(
                name, device: "d1", at: "2026-06-01T13:0\(index):00Z", installClick: "c1", openType: "deferred")
        }
        try fixture.load()
        let service = ReportService(connection: database.connection)
        let links = try service.links(app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        let x1 = try #require(links.rows.first { $0.path == "/x" && $0.day == day("2026-06-01") })
        for name in names { #expect(x1.events[name] == 1, "\(name)") }
        let fromViews = try service.linksFromViews(app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        #expect(links == fromViews)
        // The decoded maps write their names with the list's keys, encoded once (JSONKeys); the views'
        // maps (built from dictionaries) write each name: the same JSON, escapes included.
        #expect(x1.events.keys != nil && fromViews.rows.allSatisfy { $0.events.keys == nil })
        let json = ReportRenderer.bytes(links, as: .json)
        #expect(json == ReportRenderer.bytes(fromViews, as: .json))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
        let rows = try #require((parsed["tables"] as? [String: Any])?["links"] as? [[String: Any]])
        let events = try #require(rows.first { $0["path"] as? String == "/x" }?["events"] as? [String: Int])
        for name in names { #expect(events[name] == 1, "\(name)") }
        #expect(
            try service.attribution(app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
                == service.attributionFromViews(app: "a", from: day("2026-06-01"), to: day("2026-06-30")))
    }

    @Test("paths and UTM values with commas, quotes, backslashes, braces, newlines or NULL survive the packed reads")
    func awkwardPathsAndUTM() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try loadSmallWorld(fixture)
        let values = ["a,b", #"say "hi""#, #"back\slash"#, "NULL", "{x}", "two words", "é ü", #"/p,{1}"\"#, "1,\n2"]
        for (index, value) in values.enumerated() {
            fixture.click(
                "k\(index)", path: "/odd " + value, at: "2026-06-02T10:0\(index):00Z", source: value,
                medium: index.isMultiple(of: 2) ? nil : value, campaign: value)
            fixture.match("k\(index)", at: "2026-06-02T11:0\(index):00Z")
            fixture.event(
                "purchase", device: "dk\(index)", at: "2026-06-02T11:0\(index):30Z", installClick: "k\(index)",
                openType: "deferred")
        }
        try fixture.load()
        let service = ReportService(connection: database.connection)
        let (from, to) = (day("2026-06-01"), day("2026-06-30"))
        let links = try service.links(app: "a", from: from, to: to)
        for value in values {
            #expect(links.rows.contains { $0.path == "/odd " + value && $0.events["purchase"] == 1 }, "\(value)")
            #expect(links.utm.contains { $0.source == value && $0.campaign == value }, "\(value)")
        }
        #expect(links == (try service.linksFromViews(app: "a", from: from, to: to)))
        #expect(
            try service.attribution(app: "a", from: from, to: to)
                == service.attributionFromViews(app: "a", from: from, to: to))
        #expect(
            try service.funnel(app: "a", from: from, to: to) == service.funnelFromViews(app: "a", from: from, to: to))
    }

    @Test("names stored in another order than Swift's (a database collation other than C) read and print sorted")
    func namesInCollationOrder() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        // What an en_US collation's array_agg(... ORDER BY name) gives: case and punctuation ignored
        // first, so "a_y" before "B_x"; Swift's order (and C's) is by code point. A repeated name
        // keeps its last value, as a dictionary built in order would.
        try database.connection.execute(
            """
            UPDATE rollup_link_summary SET event_names = '{a_y,B_x,_z,B_x}', event_counts = '{1,2,3,4}',
                event_counts_ios = '{1,0,3,0}', event_counts_android = '{0,2,0,4}'
            WHERE app_id = 'a' AND path = '/x' AND day = '2026-06-01'
            """)
        let report = try ReportService(connection: database.connection).links(
            app: "a", from: day("2026-06-01"), to: day("2026-06-01"))
        let x1 = try #require(report.rows.first { $0.path == "/x" })
        #expect(x1.events == ["a_y": 1, "B_x": 4, "_z": 3])
        #expect(x1.events.names == ["B_x", "_z", "a_y"])
        #expect(x1.ios.events == ["a_y": 1, "B_x": 0, "_z": 3])  // the splits follow the same order
        #expect(x1.android.events == ["a_y": 0, "B_x": 4, "_z": 0])
        let json = ReportRenderer.render(report, as: .json)
        #expect(json.contains(#""events":{"B_x":4,"_z":3,"a_y":1}"#), "\(json)")
    }

    @Test(
        "attribution: names stored in another order than Swift's read and print sorted, a repeat keeps its last value")
    func attributionNamesInCollationOrder() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        // As above, for the attribution line's four maps (events and revenue, by cohort and activity).
        try storeAttributionNamesInCollationOrder(database.connection)
        let report = try ReportService(connection: database.connection).attribution(
            app: "a", from: day("2026-06-01"), to: day("2026-06-01"))
        let x1 = try #require(report.rows.first { $0.path == "/x" })
        #expect(x1.cohortEvents == ["a_y": 1, "B_x": 4, "_z": 3])
        #expect(x1.cohortEvents.names == ["B_x", "_z", "a_y"])
        #expect(x1.cohortRevenue == ["EUR": "2", "usd": "3.25"])
        #expect(x1.activityEvents == ["A": 6, "b": 5])
        #expect(x1.activityRevenue.isEmpty)
        let json = ReportRenderer.render(report, as: .json)
        #expect(json.contains(#""cohort_events":{"B_x":4,"_z":3,"a_y":1},"activity_events":{"A":6,"b":5}"#), "\(json)")
        #expect(json.contains(#""cohort_revenue":{"EUR":"2","usd":"3.25"},"activity_revenue":{}"#), "\(json)")
    }
}
