import Foundation
import Postgres
import Reports

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
