import Postgres
import Reports
import Testing

@Suite struct IncrementalTests {
    /// Loads, in a hostile order, a world whose sources arrive late: a match before its click, an
    /// attributed action days after the install, the click after the action carrying it, an event
    /// older than the install that moves the install day (and breaks the attribution), a late
    /// re-engagement click. After every load the incremental rollups must equal a rebuild.
    /// Driven three ways: refresh_rollups with the aggregator's staging table, refresh_rollups without
    /// it (whole UTC days), and queue_rollups with process_rollups before each comparison.
    @Test(
        "incremental refresh equals rebuild_rollups after every out-of-order load",
        arguments: [(true, false), (false, false), (true, true)])
    func outOfOrder(staging: Bool, queued: Bool) throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        let fixture = Fixture(connection, staging: staging, queued: queued)
        try fixture.app("a")
        try fixture.app("b")
        try fixture.watermark("2026-06-20T00:00:00Z")
        try connection.execute(
            "INSERT INTO funnels (app_id, funnel_id, name, steps) VALUES ('a', 'onboarding', 'Onboarding', \(["app_open", "sign_up", "purchase"])::text[])"
        )

        var checks = 0
        func check(_ step: String) throws {
            if queued { try fixture.process() }
            try expectEqualsRebuild(connection, after: step)
            checks += 1
        }

        // 1: a match whose click has not arrived; d1 opens the app (no attribution yet).
        fixture.match("c1", at: "2026-06-01T10:05:00Z")
        fixture.event("app_open", device: "d1", at: "2026-06-01T10:06:00Z", kind: "retention")
        fixture.event("app_open", device: "b1", app: "b", at: "2026-06-01T10:06:00Z", kind: "retention")
        try fixture.load()
        try check("match before click")

        // 2: two days later, d1's first action arrives carrying the install click (still unknown).
        fixture.event(
            "sign_up", device: "d1", at: "2026-06-01T10:07:00Z", installClick: "c1", openType: "deferred")
        fixture.event(
            "purchase", device: "d1", at: "2026-06-03T09:00:00Z", installClick: "c1",
            openType: "deferred",
            data: #"{"revenue":19.99,"currency":"USD"}"#)
        fixture.event("app_open", device: "d1", at: "2026-06-02T09:00:00Z", kind: "retention")
        try fixture.load()
        try check("action before click")

        // 3: the click arrives: d1 becomes attributed to /x on 06-01, its events move to /x.
        fixture.click("c1", path: "/x", at: "2026-06-01T10:00:00Z")
        fixture.click("c9", app: "b", path: "/x", at: "2026-06-01T10:00:00Z")
        try fixture.load()
        try check("click after match and action")
        let service = ReportService(connection: connection)
        var links = try service.links(app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        #expect(links.rows.first { $0.day == day("2026-06-01") }?.attributedInstalls == 1)
        #expect(links.rows.first { $0.day == day("2026-06-01") }?.matchedInstalls == 1)
        #expect(links.rows.first { $0.day == day("2026-06-03") }?.revenue == ["USD": "19.99"])

        // 4: a re-engagement: an action opened through c5, which arrives only afterwards.
        fixture.event(
            "view_item", device: "d1", at: "2026-06-12T10:00:00Z", installClick: "c1", openClick: "c5",
            openType: "verified")
        try fixture.load()
        try check("open before its click")
        fixture.click("c5", path: "/z", at: "2026-06-12T09:59:00Z", kind: "universal_link")
        try fixture.load()
        try check("late universal link click")
        links = try service.links(app: "a", from: day("2026-06-01"), to: day("2026-06-30"))
        #expect(links.rows.first { $0.path == "/z" }?.reengagements == 1)

        // 5: an older event of d1 arrives: its install moves to 05-25, more than the lookback before
        // the click... no: the click is after the install, so d1 is organic now, everywhere.
        fixture.event("app_open", device: "d1", at: "2026-05-31T23:00:00Z", kind: "retention")
        try fixture.load()
        try check("older event moves the install day")
        links = try service.links(app: "a", from: day("2026-05-01"), to: day("2026-06-30"))
        #expect(
            links.rows.allSatisfy {
                $0.attributedInstalls == 0 && $0.events.isEmpty && $0.revenue.isEmpty
            })
        #expect(links.rows.first { $0.day == day("2026-06-01") }?.matchedInstalls == 1)
        let attribution = try service.attribution(
            app: "a", from: day("2026-05-01"), to: day("2026-06-30"))
        #expect(
            attribution == (try service.attributionFromViews(app: "a", from: day("2026-05-01"), to: day("2026-06-30"))))
        #expect(links == (try service.linksFromViews(app: "a", from: day("2026-05-01"), to: day("2026-06-30"))))
        #expect(
            try service.retention(app: "a", from: day("2026-05-01"), to: day("2026-06-30"))
                == service.retentionFromViews(app: "a", from: day("2026-05-01"), to: day("2026-06-30")))
        #expect(
            attribution.installs.map { "\($0.day) \($0.installs) \($0.organicInstalls)" } == [
                "2026-05-31 1 1"
            ])
        let retention = try service.retention(app: "a", from: day("2026-05-01"), to: day("2026-06-30"))
        #expect(
            retention.rows.map { "\($0.path ?? "organic") \($0.cohortDay) \($0.cohortSize)" } == [
                "organic 2026-05-31 1"
            ])
        // app_open on 06-01 = day 1; day 14 (06-14) is after the newest event (06-12): not reached
        #expect(retention.rows.first?.retained == [1, 0, 0, nil, nil])

        // 6: d2 is known without attribution; its first attributed action arrives, then an earlier
        // action carrying another install click. Both clicks are within the lookback: the later
        // click (c7) keeps the attribution (069; until then the earliest event's click, c6, took it
        // over). AttributionClickTests has the cases where another click takes over.
        fixture.click("c6", path: "/w", at: "2026-06-05T09:00:00Z")
        fixture.click("c7", path: "/v", at: "2026-06-05T09:30:00Z")
        fixture.event("app_open", device: "d2", at: "2026-06-05T10:00:00Z", kind: "retention")
        try fixture.load()
        try check("known device, no attribution")
        fixture.event("purchase", device: "d2", at: "2026-06-05T12:00:00Z", installClick: "c7", openType: "deferred")
        try fixture.load()
        try check("first attributed action of a known device")
        links = try service.links(app: "a", from: day("2026-06-05"), to: day("2026-06-05"))
        #expect(links.rows.map { "\($0.path) \($0.attributedInstalls)" } == ["/v 1", "/w 0"])
        fixture.event("sign_up", device: "d2", at: "2026-06-05T11:00:00Z", installClick: "c6", openType: "deferred")
        try fixture.load()
        try check("an earlier action with another install click")
        links = try service.links(app: "a", from: day("2026-06-05"), to: day("2026-06-05"))
        #expect(links.rows.map { "\($0.path) \($0.attributedInstalls)" } == ["/v 1", "/w 0"])
        links = try service.links(app: "a", from: day("2026-05-01"), to: day("2026-06-04"))

        // App b never shows up in app a's reports, and the reverse.
        let b = try service.links(app: "b", from: day("2026-05-01"), to: day("2026-06-30"))
        #expect(
            b.rows.map { "\($0.path) \($0.day) \($0.clicks) \($0.matchedInstalls)" } == [
                "/x 2026-06-01 1 0"
            ])
        #expect(links.rows.first { $0.path == "/x" && $0.day == day("2026-06-01") }?.clicks == 1)
        #expect(checks == 9)
    }

    @Test("days are calendar days in the app's time zone")
    func timeZone() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a", timeZone: "America/New_York")
        // 02:00 UTC on 06-02 is 22:00 on 06-01 in New York (EDT, UTC-4).
        fixture.click("c1", path: "/x", at: "2026-06-02T02:00:00Z")
        fixture.click("c2", path: "/x", at: "2026-06-02T05:00:00Z")
        fixture.event("app_open", device: "d1", at: "2026-06-02T02:10:00Z", kind: "retention")
        fixture.event(
            "sign_up", device: "d1", at: "2026-06-02T02:11:00Z", installClick: "c1", openType: "deferred")
        fixture.event("app_open", device: "d1", at: "2026-06-02T05:00:00Z", kind: "retention")  // 01:00 on 06-02: day 1
        try fixture.load()
        try fixture.watermark("2026-06-10T00:00:00Z")
        let service = ReportService(connection: database.connection)
        let links = try service.links(app: "a", from: day("2026-06-01"), to: day("2026-06-02"))
        #expect(
            links.rows.map { "\($0.day) \($0.clicks) \($0.attributedInstalls)" } == [
                "2026-06-01 1 1", "2026-06-02 1 0",
            ])
        let retention = try service.retention(app: "a", from: day("2026-06-01"), to: day("2026-06-01"))
        #expect(retention.rows.first?.retained.first == 1)
    }

    @Test(
        "where clocks fall back across midnight (Atlantic/Azores), a day starts at its first midnight, incrementally and in a rebuild alike",
        arguments: [false, true])
    func midnightFallsBack(queued: Bool) throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection, queued: queued)
        // On 2026-10-25 at 01:00 (UTC+0) the Azores go back to 00:00 (UTC-1): 00:00-01:00 twice.
        try fixture.app("a", timeZone: "Atlantic/Azores")
        try fixture.watermark("2026-11-10T00:00:00Z")
        fixture.event("app_open", device: "d1", at: "2026-10-24T12:00:00Z", kind: "retention")
        try fixture.load()
        if queued { try fixture.process() }
        // 00:30 on the 25th, the first time round: a click and d1 back on day 1.
        fixture.click("c1", path: "/x", at: "2026-10-25T00:30:00Z")
        fixture.event("app_open", device: "d1", at: "2026-10-25T00:30:00Z", kind: "retention")
        try fixture.load()
        if queued { try fixture.process() }
        let service = ReportService(connection: database.connection)
        let links = try service.links(app: "a", from: day("2026-10-24"), to: day("2026-10-25"))
        #expect(links.rows.map { "\($0.path) \($0.day) \($0.clicks)" } == ["/x 2026-10-25 1"])
        let retention = try service.retention(app: "a", from: day("2026-10-24"), to: day("2026-10-24"))
        #expect(retention.rows.first?.retained.first == 1)
        try expectEqualsRebuild(database.connection, after: "a click in the first of two midnights")
        // The daily job's end of the 24th is that first midnight too.
        let end = try database.connection.query(
            "SELECT report_day_start('2026-10-25', 'Atlantic/Azores') = '2026-10-25T00:00:00Z'::timestamptz AS first")
        #expect(try end.first?["first", as: Bool.self] == true)
    }

    @Test("app-defined funnels start at the device's first step-1 event")
    func appFunnel() throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        let fixture = Fixture(connection)
        try fixture.app("a")
        try connection.execute(
            "INSERT INTO funnels (app_id, funnel_id, name, steps) VALUES ('a', 'checkout', 'Checkout', \(["view_item", "add_to_cart", "purchase"])::text[])"
        )
        fixture.event("view_item", device: "d1", at: "2026-06-01T10:00:00Z")
        fixture.event("add_to_cart", device: "d1", at: "2026-06-01T10:00:30Z")
        fixture.event("purchase", device: "d1", at: "2026-06-01T10:01:30Z")
        fixture.event("view_item", device: "d2", at: "2026-06-01T11:00:00Z")
        fixture.event("add_to_cart", device: "d2", at: "2026-06-01T11:01:30Z")
        fixture.event("purchase", device: "d2", at: "2026-06-09T11:00:00Z")  // outside the 7-day window
        fixture.event("add_to_cart", device: "d3", at: "2026-06-01T09:00:00Z")  // before its view_item: no step 2
        fixture.event("view_item", device: "d3", at: "2026-06-01T09:30:00Z")
        try fixture.load()
        let report = try ReportService(connection: connection).funnel(
            app: "a", from: day("2026-06-01"), to: day("2026-06-01"))
        let checkout = report.rows.filter { $0.funnelID == "checkout" }
        #expect(checkout.map(\.path) == [nil, nil, nil])
        #expect(checkout.map(\.devices) == [3, 2, 1])
        #expect(checkout.map(\.medianSecondsFromPrevious) == [nil, "60", "60"])
        #expect(checkout.map(\.funnelName) == ["Checkout", "Checkout", "Checkout"])
        #expect(
            report
                == (try ReportService(connection: connection).funnelFromViews(
                    app: "a", from: day("2026-06-01"), to: day("2026-06-01"))))
    }

    /// reports.md: each step performed "in order": a step that repeats an earlier step's event name
    /// needs another event. Before 068 a device with one app_open converted app_open -> app_open
    /// (the same event twice, median 0 s).
    @Test("a funnel step repeating an earlier step's event name needs another event, incrementally and rebuilt")
    func repeatedStepName() throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        let fixture = Fixture(connection)
        try fixture.app("a")
        try connection.execute(
            "INSERT INTO funnels (app_id, funnel_id, name, steps) VALUES ('a', 'again', 'Again', \(["app_open", "app_open"])::text[]), ('a', 'around', 'Around', \(["app_open", "sign_up", "app_open"])::text[])"
        )
        fixture.event("app_open", device: "d1", at: "2026-06-01T10:00:00Z", kind: "retention")  // once only
        fixture.event("app_open", device: "d2", at: "2026-06-01T10:00:00Z", kind: "retention")
        // d3: two distinct app_opens at the same instant: equal times are allowed for distinct events.
        fixture.event("app_open", device: "d3", at: "2026-06-01T11:00:00Z", kind: "retention")
        fixture.event("app_open", device: "d3", at: "2026-06-01T11:00:00Z", kind: "retention")
        // d4: app_open, sign_up, and no second app_open: "around" stops at sign_up.
        fixture.event("app_open", device: "d4", at: "2026-06-01T12:00:00Z", kind: "retention")
        fixture.event("sign_up", device: "d4", at: "2026-06-01T12:05:00Z")
        // d5: app_open and sign_up at the same instant: step 3 may not take step 1's app_open again.
        fixture.event("app_open", device: "d5", at: "2026-06-01T13:00:00Z", kind: "retention")
        fixture.event("sign_up", device: "d5", at: "2026-06-01T13:00:00Z")
        try fixture.load()

        func rows(_ funnel: String) throws -> [(devices: Int, median: String?)] {
            try ReportService(connection: connection).funnel(app: "a", from: day("2026-06-01"), to: day("2026-06-01"))
                .rows.filter { $0.funnelID == funnel }.map { ($0.devices, $0.medianSecondsFromPrevious) }
        }
        #expect(try rows("again").map(\.devices) == [5, 1])  // d3 only: the others have one app_open
        #expect(try rows("again").map(\.median) == [nil, "0"])
        #expect(try rows("around").map(\.devices) == [5, 2, 0])
        try expectEqualsRebuild(connection, after: "first load")

        // d2's second app_open arrives late: d2 now reaches step 2, two hours after step 1.
        fixture.event("app_open", device: "d2", at: "2026-06-01T12:00:00Z", kind: "retention")
        try fixture.load()
        #expect(try rows("again").map(\.devices) == [5, 2])
        #expect(try rows("again").map(\.median) == [nil, "3600"])
        // d4's second app_open, after its sign_up: "around" completes for d4.
        fixture.event("app_open", device: "d4", at: "2026-06-01T12:05:00Z", kind: "retention")
        try fixture.load()
        #expect(try rows("around").map(\.devices) == [5, 2, 1])
        #expect(try rows("again").map(\.devices) == [5, 3])
        try expectEqualsRebuild(connection, after: "late second app_opens")

        // After a rebuild, the same numbers.
        try connection.execute("SELECT rebuild_rollups()")
        #expect(try rows("again").map(\.devices) == [5, 3])
        #expect(try rows("around").map(\.devices) == [5, 2, 1])
    }

    /// docs/reports.md tells operators to run `SELECT rebuild_rollups();` (from psql, whose session
    /// TimeZone is the server's default, not the aggregator's UTC). Before sql/070 the funnel's
    /// deadline (click time + conversion window) and refresh_rollups' whole UTC days (midnight +
    /// 1 day) were computed in the session's zone: across Europe/Berlin's switch to summer time
    /// (2026-03-29T01:00Z) "7 days" were 167 hours and a UTC day 23, so the rebuild dropped a funnel
    /// step and the refresh missed an event that the aggregator's own numbers had.
    @Test("rollups refreshed or rebuilt from a session in another time zone equal the UTC ones")
    func sessionTimeZone() throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        let fixture = Fixture(connection, staging: false)
        try fixture.app("a")
        fixture.click("c1", path: "/x", at: "2026-03-25T12:00:00Z")
        fixture.event("app_open", device: "d1", at: "2026-03-25T12:01:00Z", kind: "retention")
        // 167.5 hours after the click: within the 7-day conversion window.
        fixture.event("sign_up", device: "d1", at: "2026-04-01T11:30:00Z", installClick: "c1", openType: "deferred")
        try fixture.load()
        func funnel() throws -> [Int] {
            try ReportService(connection: connection).funnel(app: "a", from: day("2026-03-25"), to: day("2026-03-25"))
                .rows.filter { $0.funnelID == "default" }.map(\.devices)
        }
        #expect(try funnel() == [1, 1, 1, 1, 0])

        try connection.execute("SET TimeZone TO 'Europe/Berlin'")
        try connection.execute("SELECT rebuild_rollups()")
        try connection.execute("SET TimeZone TO 'UTC'")
        #expect(try funnel() == [1, 1, 1, 1, 0], "rebuilt from a Europe/Berlin session")
        try expectEqualsRebuild(connection, after: "a rebuild from a Europe/Berlin session")

        // Without the staging table a refresh reads whole UTC days; 23:30Z is in UTC day 03-29.
        fixture.event("view_item", device: "d1", at: "2026-03-29T23:30:00Z", installClick: "c1", openType: "deferred")
        try connection.execute("SET TimeZone TO 'Europe/Berlin'")
        try fixture.load()
        try connection.execute("SET TimeZone TO 'UTC'")
        let events = try ReportService(connection: connection).links(
            app: "a", from: day("2026-03-29"), to: day("2026-03-29"))
        #expect(events.rows.map { $0.events["view_item"] } == [1], "refreshed from a Europe/Berlin session")
        try expectEqualsRebuild(connection, after: "a refresh from a Europe/Berlin session")
    }
}

extension IncrementalTests {
    /// A pass looks up each work device's funnel entries three times; with only the (app, funnel)
    /// indexes each lookup read every entry the app ever had (sql/081).
    @Test("a pass of one device reads its funnel entries through an index, not the app's whole history")
    func funnelEntriesByDevice() throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        let fixture = Fixture(connection, queued: true)
        try fixture.app("a")
        try fixture.watermark("2026-06-20T00:00:00Z")
        try connection.execute(
            "INSERT INTO funnels (app_id, funnel_id, name, steps) VALUES ('a', 'onboarding', 'Onboarding', \(["app_open", "sign_up"])::text[])"
        )
        // The app's history: 40,000 devices that entered the funnel in May, analysed as autovacuum would.
        try connection.execute(
            """
            INSERT INTO rollup_funnel_entries (app_id, funnel_id, device_id, entered_at, entered_day)
            SELECT 'a', 'onboarding', 'old-' || n, '2026-05-01T00:00:00Z', '2026-05-01' FROM generate_series(1, 40000) n
            """)
        try connection.execute("ANALYZE rollup_funnel_entries")
        fixture.event("app_open", device: "d1", at: "2026-06-01T10:00:00Z", kind: "retention")
        fixture.event("sign_up", device: "d1", at: "2026-06-01T10:05:00Z")
        try fixture.load()
        try connection.withTransaction { connection in
            try connection.execute("SELECT process_rollups()")
            let scans = try #require(
                try connection.query(
                    """
                    SELECT seq_scan::int AS seq, coalesce(idx_scan, 0)::int AS idx FROM pg_stat_xact_user_tables
                    WHERE schemaname = current_schema() AND relname = 'rollup_funnel_entries'
                    """
                ).first)
            #expect(try scans["seq", as: Int.self] == 0, "the pass read rollup_funnel_entries whole")
            #expect(try scans["idx", as: Int.self] > 0)
        }
        #expect(
            try connection.query(
                "SELECT entered_day::text AS day FROM rollup_funnel_entries WHERE device_id = 'd1'"
            ).map { try $0["day", as: String.self] } == ["2026-06-01"])
    }

    /// Ingest keeps numbers as written and jsonb holds any numeric: two purchases of 9e131071 summed
    /// past numeric's range and failed the pass, for every app, at every pass after (sql/082).
    @Test("absurd revenue amounts add no revenue and do not stop the rollups of any app")
    func absurdRevenue() throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        let fixture = Fixture(connection, queued: true)
        try fixture.app("a")
        try fixture.app("b")
        try fixture.watermark("2026-06-20T00:00:00Z")
        fixture.click("c1", path: "/x", at: "2026-06-01T10:00:00Z")
        for (minute, data) in [
            #"{"revenue":9e131071,"currency":"USD"}"#, #"{"revenue":9e131071,"currency":"USD"}"#,
            #"{"revenue":"\#(String(repeating: "9", count: 200_000))","currency":"USD"}"#,
            #"{"revenue":"0.\#(String(repeating: "9", count: 20_000))","currency":"USD"}"#,
            #"{"value":-1e255,"currency":"USD"}"#, #"{"revenue":19.99,"currency":"USD"}"#,
            // Unicode spaces, which a UTF-8 database's regex \s matched and the cast does not skip.
            #"{"revenue":"\u20035","currency":"USD"}"#, #"{"value":"12\u3000","currency":"USD"}"#,
        ].enumerated() {
            fixture.event(
                "purchase", device: "d1", at: "2026-06-01T10:1\(minute):00Z", installClick: "c1", openType: "deferred",
                data: data)
        }
        // Not a purchase, yet its amount is read too (the day's sums are computed per row).
        fixture.event(
            "app_open", device: "d1", at: "2026-06-01T12:00:00Z", kind: "retention", data: #"{"value":"1\u2028"}"#)
        fixture.event("purchase", device: "e1", app: "b", at: "2026-06-01T11:00:00Z", data: #"{"revenue":5}"#)
        try fixture.load()
        try fixture.process()
        let links = try ReportService(connection: connection).links(
            app: "a", from: day("2026-06-01"), to: day("2026-06-01"))
        #expect(links.rows.map(\.revenue) == [["USD": "19.99"]])
        #expect(links.rows.map { $0.events["purchase"] } == [8])
        #expect(
            try connection.query("SELECT sum(events)::int AS n FROM rollup_events_daily WHERE app_id = 'b'").first?[
                "n", as: Int.self] == 1)
        try expectEqualsRebuild(connection, after: "absurd amounts")
    }
}

/// Thrown to roll a transaction back on purpose.
struct Rollback: Error {}

/// Expects every rollup table and report view to equal what `rebuild_rollups()` computes from the
/// raw tables (the rebuild is rolled back).
func expectEqualsRebuild(_ connection: Connection, after step: String) throws {
    let incremental = try snapshot(connection)
    do {
        try connection.withTransaction { connection in
            try connection.execute("SELECT rebuild_rollups()")
            let rebuilt = try snapshot(connection)
            for (relation, lines) in incremental.sorted(by: { $0.key < $1.key }) {
                #expect(lines == rebuilt[relation], "after \(step): \(relation) differs from a rebuild")
            }
            throw Rollback()
        }
    } catch is Rollback {}
}

@Suite struct AppSettingsTests {
    @Test("an unknown reporting time zone is refused when the app is created or changed")
    func unknownTimeZone() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        #expect(throws: PostgresError.self) { try fixture.app("a", timeZone: "Mars/Olympus_Mons") }
        try fixture.app("a", timeZone: "Europe/Berlin")
        #expect(throws: PostgresError.self) {
            try database.connection.execute("UPDATE apps SET time_zone = 'Nowhere' WHERE id = 'a'")
        }
    }
}
