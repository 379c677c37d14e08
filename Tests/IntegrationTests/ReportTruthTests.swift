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

/// The comparable facts of a truth file or of the report views.
enum TruthFacts {
    static let counts = ["clicks", "universal_link_opens", "matched_installs", "attributed_installs", "reengagements"]

    /// Facts from the simulator's truth JSON (zeros left out: the views keep only non-zero rows).
    static func from(_ truth: [String: Any]) throws -> Set<String> {
        var facts = Set<String>()
        for row in truth["link_daily"] as? [[String: Any]] ?? [] {
            let key = "\(row["link"] as? String ?? "?")|\(row["day"] as? String ?? "?")"
            var slices: [(String, [String: Any])] = [("", row["total"] as? [String: Any] ?? [:])]
            for (platform, slice) in row["by_platform"] as? [String: [String: Any]] ?? [:] {
                slices.append(("_" + platform, slice))
            }
            for (suffix, slice) in slices {
                for metric in counts {
                    if let value = slice[metric] as? Int, value != 0 {
                        facts.insert("link|\(key)|\(metric)\(suffix)=\(value)")
                    }
                }
                for (kind, field) in [("event", "events"), ("retention", "retention_events")] {
                    for (name, value) in slice[field] as? [String: Int] ?? [:] where value != 0 {
                        facts.insert("events\(suffix)|\(key)|\(kind)|\(name)=\(value)")
                    }
                }
                for (currency, amount) in slice["revenue"] as? [String: [String: Any]] ?? [:] {
                    if let cents = amount["cents"] as? Int, cents != 0 {
                        facts.insert("revenue\(suffix)|\(key)|\(currency)=\(cents)")
                    }
                }
            }
        }
        for row in truth["link_daily"] as? [[String: Any]] ?? [] {
            let key = "\(row["link"] as? String ?? "?")|\(row["day"] as? String ?? "?")"
            for utm in row["by_utm"] as? [[String: Any]] ?? [] {
                let labels = ["utm_source", "utm_medium", "utm_campaign"].map { utm[$0] as? String ?? "-" }
                for (metric, value) in utm["counts"] as? [String: Any] ?? [:] where counts.contains(metric) {
                    if let value = value as? Int, value != 0 {
                        facts.insert("utm|\(key)|\(labels.joined(separator: "|"))|\(metric)=\(value)")
                    }
                }
            }
        }
        let attribution = truth["attribution"] as? [String: Any] ?? [:]
        for (field, label) in [
            ("organic_installs_by_day", "organic"), ("unattributable_devices_by_day", "unattributable"),
        ] {
            for (day, value) in attribution[field] as? [String: Int] ?? [:] where value != 0 {
                facts.insert("installs|\(day)|\(label)=\(value)")
            }
        }
        for funnel in truth["funnels"] as? [[String: Any]] ?? [] {
            let link = funnel["link"] as? String ?? "?"
            for cohort in funnel["cohorts"] as? [[String: Any]] ?? [] {
                let day = cohort["day"] as? String ?? "?"
                for (index, value) in (cohort["counts"] as? [Int] ?? []).enumerated() where value != 0 {
                    facts.insert("funnel|\(link)|\(day)|\(index + 1)=\(value)")
                }
                for (index, value) in (cohort["median_seconds"] as? [Any] ?? []).enumerated() {
                    if let seconds = (value as? NSNumber)?.doubleValue {
                        facts.insert("median|\(link)|\(day)|\(index + 1)=\(String(format: "%.1f", seconds))")
                    }
                }
            }
        }
        for link in attribution["links"] as? [[String: Any]] ?? [] {
            let path = link["link"] as? String ?? "?"
            for (basis, field, actions) in [
                ("install_date", "by_install_date", "cohort"), ("event_date", "by_event_date", "activity"),
            ] {
                for row in link[field] as? [[String: Any]] ?? [] {
                    let key = "\(path)|\(row["day"] as? String ?? "?")"
                    if let installs = row["installs"] as? Int, installs != 0 {
                        facts.insert("attributed|\(key)=\(installs)")
                    }
                    if let count = row["actions"] as? Int, count != 0 { facts.insert("\(actions)|\(key)=\(count)") }
                    for (name, value) in row["events"] as? [String: Int] ?? [:] where value != 0 {
                        facts.insert("attribution_events|\(basis)|\(key)|\(name)=\(value)")
                    }
                    for (currency, amount) in row["revenue"] as? [String: [String: Any]] ?? [:] {
                        if let cents = amount["cents"] as? Int, cents != 0 {
                            facts.insert("attribution_revenue|\(basis)|\(key)|\(currency)=\(cents)")
                        }
                    }
                }
            }
            for (day, opens) in link["last_touch_opens"] as? [String: Int] ?? [:] where opens != 0 {
                facts.insert("opens|\(path)|\(day)=\(opens)")
            }
        }
        let retention = truth["retention"] as? [String: Any] ?? [:]
        let retentionDays = retention["days"] as? [Int] ?? []
        for cohort in retention["cohorts"] as? [[String: Any]] ?? [] {
            let key = "\(cohort["link"] as? String ?? "organic")|\(cohort["day"] as? String ?? "?")"
            facts.insert("cohort|\(key)|size=\(cohort["size"] as? Int ?? -1)")
            for (day, value) in zip(retentionDays, cohort["retained"] as? [Any] ?? []) {
                facts.insert("retained|\(key)|d\(day)=\((value as? Int).map(String.init) ?? "null")")
            }
        }
        return facts
    }

    /// Facts from the report views of `app`, in the same shape.
    static func from(_ connection: Connection, app: String) throws -> Set<String> {
        var facts = Set<String>()
        let platformColumns = counts.flatMap { [$0, $0 + "_ios", $0 + "_android"] }
        for row in try connection.query(
            "SELECT path, to_char(day, 'YYYY-MM-DD') AS day, \(fragment: SQL(stringLiteral: platformColumns.joined(separator: ", "))) FROM report_link_daily WHERE app_id = \(app)"
        ) {
            let key = "\(try row["path", as: String.self])|\(try row["day", as: String.self])"
            for column in platformColumns {
                let value = try row[column, as: Int.self]
                if value != 0 { facts.insert("link|\(key)|\(column)=\(value)") }
            }
        }
        for row in try connection.query(
            "SELECT path, to_char(day, 'YYYY-MM-DD') AS day, kind, name, events, events_ios, events_android FROM report_link_daily_events WHERE app_id = \(app)"
        ) {
            let key =
                "\(try row["path", as: String.self])|\(try row["day", as: String.self])|\(try row["kind", as: String.self])|\(try row["name", as: String.self])"
            for (suffix, column) in [("", "events"), ("_ios", "events_ios"), ("_android", "events_android")] {
                let value = try row[column, as: Int.self]
                if value != 0 { facts.insert("events\(suffix)|\(key)=\(value)") }
            }
        }
        for row in try connection.query(
            """
            SELECT path, to_char(day, 'YYYY-MM-DD') AS day, currency, round(revenue * 100)::bigint AS total,
                   round(revenue_ios * 100)::bigint AS ios, round(revenue_android * 100)::bigint AS android
            FROM report_link_daily_revenue WHERE app_id = \(app)
            """)
        {
            let key =
                "\(try row["path", as: String.self])|\(try row["day", as: String.self])|\(try row["currency", as: String.self])"
            for (suffix, column) in [("", "total"), ("_ios", "ios"), ("_android", "android")] {
                let value = try row[column, as: Int?.self] ?? 0
                if value != 0 { facts.insert("revenue\(suffix)|\(key)=\(value)") }
            }
        }
        for row in try connection.query(
            "SELECT to_char(day, 'YYYY-MM-DD') AS day, organic_installs, unattributable_installs FROM report_installs_daily WHERE app_id = \(app)"
        ) {
            let day = try row["day", as: String.self]
            for (label, column) in [("organic", "organic_installs"), ("unattributable", "unattributable_installs")] {
                let value = try row[column, as: Int.self]
                if value != 0 { facts.insert("installs|\(day)|\(label)=\(value)") }
            }
        }
        for row in try connection.query(
            """
            SELECT path, to_char(day, 'YYYY-MM-DD') AS day, step, devices, median_seconds_from_previous::float8 AS median
            FROM report_funnel WHERE app_id = \(app) AND funnel_id = 'default' AND path IS NOT NULL
            """)
        {
            let key =
                "\(try row["path", as: String.self])|\(try row["day", as: String.self])|\(try row["step", as: Int.self])"
            let devices = try row["devices", as: Int.self]
            if devices != 0 { facts.insert("funnel|\(key)=\(devices)") }
            if let median = try row["median", as: Double?.self] {
                facts.insert("median|\(key)=\(String(format: "%.1f", median))")
            }
        }
        let utmCounts = counts.filter { $0 != "reengagements" }
        for row in try connection.query(
            """
            SELECT path, to_char(day, 'YYYY-MM-DD') AS day, coalesce(utm_source, '-') AS s, coalesce(utm_medium, '-') AS m,
                   coalesce(utm_campaign, '-') AS c, \(fragment: SQL(stringLiteral: utmCounts.joined(separator: ", ")))
            FROM report_link_daily_utm WHERE app_id = \(app)
            """)
        {
            let key =
                "\(try row["path", as: String.self])|\(try row["day", as: String.self])|\(try row["s", as: String.self])|\(try row["m", as: String.self])|\(try row["c", as: String.self])"
            for column in utmCounts {
                let value = try row[column, as: Int.self]
                if value != 0 { facts.insert("utm|\(key)|\(column)=\(value)") }
            }
        }
        for row in try connection.query(
            """
            SELECT path, to_char(day, 'YYYY-MM-DD') AS day, attributed_installs, cohort_actions, activity_actions,
                   last_touch_opens
            FROM report_attribution WHERE app_id = \(app)
            """)
        {
            let key = "\(try row["path", as: String.self])|\(try row["day", as: String.self])"
            for (label, column) in [
                ("attributed", "attributed_installs"), ("cohort", "cohort_actions"), ("activity", "activity_actions"),
                ("opens", "last_touch_opens"),
            ] {
                let value = try row[column, as: Int.self]
                if value != 0 { facts.insert("\(label)|\(key)=\(value)") }
            }
        }
        for row in try connection.query(
            "SELECT path, to_char(day, 'YYYY-MM-DD') AS day, basis, name, events FROM report_attribution_events WHERE app_id = \(app)"
        ) {
            let value = try row["events", as: Int.self]
            if value != 0 {
                facts.insert(
                    "attribution_events|\(try row["basis", as: String.self])|\(try row["path", as: String.self])|\(try row["day", as: String.self])|\(try row["name", as: String.self])=\(value)"
                )
            }
        }
        for row in try connection.query(
            "SELECT path, to_char(day, 'YYYY-MM-DD') AS day, basis, currency, round(revenue * 100)::bigint AS cents FROM report_attribution_revenue WHERE app_id = \(app)"
        ) {
            let value = try row["cents", as: Int?.self] ?? 0
            if value != 0 {
                facts.insert(
                    "attribution_revenue|\(try row["basis", as: String.self])|\(try row["path", as: String.self])|\(try row["day", as: String.self])|\(try row["currency", as: String.self])=\(value)"
                )
            }
        }
        for row in try connection.query(
            "SELECT coalesce(path, 'organic') AS path, to_char(cohort_day, 'YYYY-MM-DD') AS day, cohort_size, d1, d3, d7, d14, d30 FROM report_retention WHERE app_id = \(app)"
        ) {
            let key = "\(try row["path", as: String.self])|\(try row["day", as: String.self])"
            facts.insert("cohort|\(key)|size=\(try row["cohort_size", as: Int.self])")
            for day in [1, 3, 7, 14, 30] {
                facts.insert(
                    "retained|\(key)|d\(day)=\((try row["d\(day)", as: Int?.self]).map(String.init) ?? "null")")
            }
        }
        return facts
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
