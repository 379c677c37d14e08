import Foundation
import Postgres
import Reports
import TestSupport
import Testing

/// Every number the reports show equals the simulator's truth, exactly: counts as integers,
/// revenue to the cent, medians to the second, retention nulls where a cohort has not reached day N.
/// Both sides are flattened into sets of facts ("what, where, value"), so a difference names itself.
@Suite(.serialized)
struct ReportTruthTests {
    @Test(
        "reports equal the simulator's truth",
        arguments: [(seed: 3, devices: 250, links: 6, days: 21), (seed: 11, devices: 600, links: 12, days: 30)])
    func reportsMatchTruth(seed: Int, devices: Int, links: Int, days: Int) throws {
        let world = try SimulatedWorldTests.play(seed: seed, devices: devices, links: links, days: days)
        defer { world.database.drop() }
        let connection = try world.connect()
        defer { connection.close() }
        _ = try connection.query("SELECT process_rollups()")

        let expected = try TruthFacts.from(world.truth)
        let actual = try TruthFacts.from(connection, app: "sim")
        let missing = expected.subtracting(actual).sorted()
        let extra = actual.subtracting(expected).sorted()
        #expect(
            missing.isEmpty && extra.isEmpty,
            "\(missing.count) facts missing from the reports, e.g. \(missing.prefix(8)); \(extra.count) unexpected, e.g. \(extra.prefix(8))"
        )
        #expect(expected.count > 200, "the world is big enough to say something: \(expected.count) facts")
        let families = Set(expected.map { String($0.prefix { $0 != "|" }) })
        for family in [
            "link", "events", "revenue", "utm", "installs", "funnel", "median", "cohort", "retained", "attributed",
            "cohort", "activity", "attribution_events", "opens",
        ] {
            #expect(families.contains(family), "the truth has no \(family) facts: the comparison would be empty there")
        }

        // The per-link report the service serves (one compact row per link and day, sql/054) is the
        // one the four per-link views give.
        let range = try connection.query(
            "SELECT min(day)::text AS first, max(day)::text AS last FROM report_link_daily WHERE app_id = 'sim'")[0]
        let first = try #require(ReportDay(iso8601: try range["first", as: String.self]))
        let last = try #require(ReportDay(iso8601: try range["last", as: String.self]))
        let service = ReportService(connection: connection)
        let links = try service.links(app: "sim", from: first, to: last)
        #expect(links.rows.count > 20)
        #expect(links == (try service.linksFromViews(app: "sim", from: first, to: last)))
        let funnel = try service.funnel(app: "sim", from: first, to: last)
        #expect(funnel.rows.count > 20)
        #expect(funnel == (try service.funnelFromViews(app: "sim", from: first, to: last)))
        let attribution = try service.attribution(app: "sim", from: first, to: last)
        #expect(attribution.rows.count > 20)
        #expect(attribution == (try service.attributionFromViews(app: "sim", from: first, to: last)))
        let retention = try service.retention(app: "sim", from: first, to: last)
        #expect(retention.rows.count > 20)
        #expect(retention == (try service.retentionFromViews(app: "sim", from: first, to: last)))

        // One link's reports (`--path`, `?path=`, sql/067) are the whole reports' rows of that link,
        // with no organic rows; attribution's installs per day stay app-wide. A path no link has
        // gives empty tables.
        let paths = Set(links.rows.map(\.path)).sorted()
        #expect(paths.count > 2)
        #expect(retention.rows.contains { $0.path == nil })
        for path in paths.prefix(3) + ["/no such link"] {
            let isLink = paths.contains(path)
            let oneLink = try service.links(app: "sim", from: first, to: last, path: path)
            #expect(oneLink.path == path)
            #expect(oneLink.rows == links.rows.filter { $0.path == path } && oneLink.rows.isEmpty == !isLink)
            #expect(oneLink.utm == links.utm.filter { $0.path == path })
            let oneFunnel = try service.funnel(app: "sim", from: first, to: last, path: path)
            #expect(oneFunnel.rows == funnel.rows.filter { $0.path == path } && oneFunnel.rows.isEmpty == !isLink)
            let oneRetention = try service.retention(app: "sim", from: first, to: last, path: path)
            #expect(oneRetention.rows == retention.rows.filter { $0.path == path })
            let oneAttribution = try service.attribution(app: "sim", from: first, to: last, path: path)
            #expect(oneAttribution.rows == attribution.rows.filter { $0.path == path })
            #expect(oneAttribution.installs == attribution.installs)
        }

        // Totals per link (`by=link`) are the views' sums over the days, computed by PostgreSQL:
        // counts, rates, events and revenue (exact numeric text), UTM combinations.
        let totals = try LinkTotalsReport(links)
        try Self.expectTotals(totals, connection, first: first, last: last)
        let oneLinkTotals = try LinkTotalsReport(
            try service.links(app: "sim", from: first, to: last, path: paths[0]))
        #expect(oneLinkTotals.rows == totals.rows.filter { $0.path == paths[0] } && oneLinkTotals.rows.count == 1)

        // A from-scratch rebuild says the same.
        _ = try connection.query("SELECT rebuild_rollups()")
        #expect(try TruthFacts.from(connection, app: "sim") == actual)
        #expect(links == (try service.links(app: "sim", from: first, to: last)))
        #expect(funnel == (try service.funnel(app: "sim", from: first, to: last)))
        #expect(attribution == (try service.attribution(app: "sim", from: first, to: last)))
        #expect(retention == (try service.retention(app: "sim", from: first, to: last)))
    }
}

extension ReportTruthTests {
    /// `totals` against `GROUP BY path` sums of the per-link views over `first`...`last`.
    static func expectTotals(_ totals: LinkTotalsReport, _ connection: Connection, first: ReportDay, last: ReportDay)
        throws
    {
        let (from, to) = (first.iso8601, last.iso8601)
        var expected: [String: LinkTotalRow] = [:]
        for row in try connection.query(
            """
            WITH active AS (
                SELECT path, day FROM report_link_daily WHERE app_id = 'sim'
                UNION SELECT path, day FROM report_link_daily_events WHERE app_id = 'sim'
                UNION SELECT path, day FROM report_link_daily_revenue WHERE app_id = 'sim'
            ), links AS (
                SELECT path, count(*)::int AS days FROM active
                WHERE day BETWEEN \(from)::date AND \(to)::date GROUP BY path
            )
            SELECT l.path, l.days, coalesce(sum(clicks), 0)::bigint AS clicks,
                   coalesce(sum(universal_link_opens), 0)::bigint AS opens,
                   coalesce(sum(matched_installs), 0)::bigint AS matched,
                   coalesce(sum(attributed_installs), 0)::bigint AS attributed,
                   coalesce(sum(reengagements), 0)::bigint AS reengagements,
                   round(sum(matched_installs)::numeric / nullif(sum(clicks), 0), 6)::text AS rate,
                   coalesce(sum(clicks_ios), 0)::bigint AS clicks_ios,
                   coalesce(sum(clicks_android), 0)::bigint AS clicks_android,
                   coalesce(sum(matched_installs_ios), 0)::bigint AS matched_ios,
                   coalesce(sum(attributed_installs_android), 0)::bigint AS attributed_android
            FROM links l
            LEFT JOIN report_link_daily d
                ON d.app_id = 'sim' AND d.path = l.path AND d.day BETWEEN \(from)::date AND \(to)::date
            GROUP BY l.path, l.days
            """)
        {
            var total = LinkTotalRow(path: try row["path", as: String.self])
            total.days = try row["days", as: Int.self]
            total.clicks = try row["clicks", as: Int.self]
            total.universalLinkOpens = try row["opens", as: Int.self]
            total.matchedInstalls = try row["matched", as: Int.self]
            total.attributedInstalls = try row["attributed", as: Int.self]
            total.reengagements = try row["reengagements", as: Int.self]
            total.installRate = try row["rate", as: String?.self]
            total.ios.clicks = try row["clicks_ios", as: Int.self]
            total.android.clicks = try row["clicks_android", as: Int.self]
            total.ios.matchedInstalls = try row["matched_ios", as: Int.self]
            total.android.attributedInstalls = try row["attributed_android", as: Int.self]
            expected[total.path] = total
        }
        var events: [String: [String: [Int]]] = [:]
        for row in try connection.query(
            """
            SELECT path, name, sum(events)::bigint AS events, sum(events_ios)::bigint AS ios,
                   sum(events_android)::bigint AS android
            FROM report_link_daily_events
            WHERE app_id = 'sim' AND kind = 'event' AND day BETWEEN \(from)::date AND \(to)::date GROUP BY path, name
            """)
        {
            events[try row["path", as: String.self], default: [:]][try row["name", as: String.self]] = [
                try row["events", as: Int.self], try row["ios", as: Int.self], try row["android", as: Int.self],
            ]
        }
        var revenue: [String: [String: [String]]] = [:]
        for row in try connection.query(
            """
            SELECT path, currency, sum(revenue)::text AS revenue, sum(revenue_ios)::text AS ios,
                   sum(revenue_android)::text AS android
            FROM report_link_daily_revenue
            WHERE app_id = 'sim' AND day BETWEEN \(from)::date AND \(to)::date GROUP BY path, currency
            """)
        {
            revenue[try row["path", as: String.self], default: [:]][try row["currency", as: String.self]] = [
                try row["revenue", as: String.self], try row["ios", as: String.self],
                try row["android", as: String.self],
            ]
        }
        #expect(totals.rows.map(\.path) == totals.rows.map(\.path).sorted() && totals.rows.count == expected.count)
        #expect(!revenue.isEmpty && !events.isEmpty, "the world has events and revenue to total")
        for total in totals.rows {
            let sums = try #require(expected[total.path], "\(total.path) is not in the view")
            let counts: [Int] = [
                total.days, total.clicks, total.universalLinkOpens, total.matchedInstalls, total.attributedInstalls,
            ]
            let expectedCounts: [Int] = [
                sums.days, sums.clicks, sums.universalLinkOpens, sums.matchedInstalls, sums.attributedInstalls,
            ]
            #expect(counts == expectedCounts, "\(total.path)")
            #expect(total.reengagements == sums.reengagements && total.installRate == sums.installRate, "\(total.path)")
            let platforms: [Int] = [
                total.ios.clicks, total.android.clicks, total.ios.matchedInstalls, total.android.attributedInstalls,
            ]
            let expectedPlatforms: [Int] = [
                sums.ios.clicks, sums.android.clicks, sums.ios.matchedInstalls, sums.android.attributedInstalls,
            ]
            #expect(platforms == expectedPlatforms, "\(total.path)")
            let names = events[total.path] ?? [:]
            #expect(total.events.dictionary == names.mapValues { $0[0] }, "\(total.path) events")
            #expect(total.ios.events.dictionary == names.mapValues { $0[1] }, "\(total.path) iOS events")
            #expect(total.android.events.dictionary == names.mapValues { $0[2] }, "\(total.path) Android events")
            let currencies = revenue[total.path] ?? [:]
            #expect(total.revenue.dictionary == currencies.mapValues { $0[0] }, "\(total.path) revenue")
            #expect(total.ios.revenue.dictionary == currencies.mapValues { $0[1] }, "\(total.path) iOS revenue")
            #expect(total.android.revenue.dictionary == currencies.mapValues { $0[2] }, "\(total.path) Android revenue")
        }
        var utm: [String: [String]] = [:]
        for row in try connection.query(
            """
            SELECT concat_ws('|', path, coalesce(utm_source, '-'), coalesce(utm_medium, '-'), coalesce(utm_campaign, '-'))
                       AS key,
                   concat_ws('|', count(*), sum(clicks), sum(universal_link_opens), sum(matched_installs),
                             sum(attributed_installs),
                             coalesce(round(sum(matched_installs)::numeric / nullif(sum(clicks), 0), 6)::text, '-'))
                       AS sums
            FROM report_link_daily_utm WHERE app_id = 'sim' AND day BETWEEN \(from)::date AND \(to)::date
            GROUP BY path, utm_source, utm_medium, utm_campaign
            """)
        {
            utm[try row["key", as: String.self], default: []].append(try row["sums", as: String.self])
        }
        let actual = Dictionary(
            grouping: totals.utm.map { row in
                (
                    [row.path, row.source ?? "-", row.medium ?? "-", row.campaign ?? "-"].joined(separator: "|"),
                    [
                        String(row.days), String(row.clicks), String(row.universalLinkOpens),
                        String(row.matchedInstalls), String(row.attributedInstalls), row.installRate ?? "-",
                    ].joined(separator: "|")
                )
            }, by: \.0
        ).mapValues { $0.map(\.1) }
        #expect(actual == utm && !utm.isEmpty)
    }
}
