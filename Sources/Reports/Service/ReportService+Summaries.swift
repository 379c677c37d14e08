import Postgres

/// The reports read from the summary views of sql/054 (one row per link and day, breakdowns as
/// arrays). A 30-day report at 1,000 links is ~30k such rows, so the rows are decoded by position
/// (after checking the result's column names once) and the arrays by `ReportArrays`.
extension ReportService {
    /// The per-link daily report (with platform splits, events, revenue and the UTM breakdown), read
    /// from `report_link_summary` in one query.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter` when `from > to`, `.database`.
    package func links(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> LinkReport {
        try validate(app: app, from: from, to: to)
        return try run {
            let watermark = try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil
            let result = try connection.query(ReportSQL.linkSummary(app: app, from: from, to: to))
            try Self.expect(
                result,
                [
                    "path", "day", "clicks", "universal_link_opens", "matched_installs", "attributed_installs",
                    "install_rate", "reengagements", "clicks_ios", "universal_link_opens_ios", "matched_installs_ios",
                    "attributed_installs_ios", "reengagements_ios", "clicks_android", "universal_link_opens_android",
                    "matched_installs_android", "attributed_installs_android", "reengagements_android", "event_names",
                    "event_counts", "retention_names", "retention_counts", "revenue_currencies", "revenue_amounts",
                    "utm_sources", "utm_mediums", "utm_campaigns", "utm_clicks", "utm_universal_link_opens",
                    "utm_matched_installs", "utm_attributed_installs", "utm_install_rates",
                ])
            // One entry per link and day: its row and its UTM rows (in the order of the arrays).
            var links: [(row: LinkDayRow, utm: [UTMRow])] = []
            links.reserveCapacity(result.count)
            for row in result {
                let path = try row[0, as: String.self]
                let day = try Self.day(row, 1)
                var link = LinkDayRow(path: path, day: day)
                link.clicks = try row[2, as: Int.self]
                link.universalLinkOpens = try row[3, as: Int.self]
                link.matchedInstalls = try row[4, as: Int.self]
                link.attributedInstalls = try row[5, as: Int.self]
                link.installRate = try row[6, as: String?.self]
                link.reengagements = try row[7, as: Int.self]
                link.ios = try Self.platform(row, from: 8)
                link.android = try Self.platform(row, from: 13)
                link.events = try Self.pairs(ReportArrays.strings(row, 18), ReportArrays.ints(row, 19))
                link.retentionEvents = try Self.pairs(ReportArrays.strings(row, 20), ReportArrays.ints(row, 21))
                link.revenue = try Self.pairs(ReportArrays.strings(row, 22), ReportArrays.strings(row, 23))
                let sources = try ReportArrays.strings(row, 24)
                let mediums = try ReportArrays.strings(row, 25)
                let campaigns = try ReportArrays.strings(row, 26)
                let clicks = try ReportArrays.ints(row, 27)
                let opens = try ReportArrays.ints(row, 28)
                let matched = try ReportArrays.ints(row, 29)
                let attributed = try ReportArrays.ints(row, 30)
                let rates = try ReportArrays.strings(row, 31)
                guard
                    [
                        mediums.count, campaigns.count, clicks.count, opens.count, matched.count, attributed.count,
                        rates.count,
                    ].allSatisfy({ $0 == sources.count })
                else { throw ReportError.database(message: "report_link_summary: UTM arrays of different lengths") }
                var utm: [UTMRow] = []
                utm.reserveCapacity(sources.count)
                for index in sources.indices {
                    utm.append(
                        UTMRow(
                            path: path, day: day, source: Self.absent(sources[index]),
                            medium: Self.absent(mediums[index]), campaign: Self.absent(campaigns[index]),
                            clicks: clicks[index], universalLinkOpens: opens[index], matchedInstalls: matched[index],
                            attributedInstalls: attributed[index], installRate: Self.absent(rates[index])))
                }
                links.append((link, utm))
            }
            // Sort positions, not the (large) entries.
            let order = links.indices.sorted {
                (links[$0].row.path, links[$0].row.day) < (links[$1].row.path, links[$1].row.day)
            }
            return LinkReport(
                app: app, from: from, to: to, watermark: watermark, rows: order.map { links[$0].row },
                utm: order.flatMap { links[$0].utm })
        }
    }

    /// The attribution report: per link and day (from `report_attribution_summary`, one row per link
    /// and day), plus app-wide installs per day.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func attribution(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> AttributionReport {
        try validate(app: app, from: from, to: to)
        return try run {
            let watermark = try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil
            let result = try connection.query(ReportSQL.attributionSummary(app: app, from: from, to: to))
            try Self.expect(
                result,
                [
                    "path", "day", "matched_installs", "attributed_installs", "cohort_actions", "activity_actions",
                    "last_touch_opens", "cohort_names", "cohort_counts", "cohort_currencies", "cohort_amounts",
                    "activity_names", "activity_counts", "activity_currencies", "activity_amounts",
                ])
            var rows: [AttributionRow] = []
            rows.reserveCapacity(result.count)
            for row in result {
                var value = AttributionRow(path: try row[0, as: String.self], day: try Self.day(row, 1))
                value.matchedInstalls = try row[2, as: Int.self]
                value.attributedInstalls = try row[3, as: Int.self]
                value.cohortActions = try row[4, as: Int.self]
                value.activityActions = try row[5, as: Int.self]
                value.lastTouchOpens = try row[6, as: Int.self]
                value.cohortEvents = try Self.pairs(ReportArrays.strings(row, 7), ReportArrays.ints(row, 8))
                value.cohortRevenue = try Self.pairs(ReportArrays.strings(row, 9), ReportArrays.strings(row, 10))
                value.activityEvents = try Self.pairs(ReportArrays.strings(row, 11), ReportArrays.ints(row, 12))
                value.activityRevenue = try Self.pairs(ReportArrays.strings(row, 13), ReportArrays.strings(row, 14))
                rows.append(value)
            }
            rows.sort { ($0.path, $0.day) < ($1.path, $1.day) }
            return AttributionReport(
                app: app, from: from, to: to, watermark: watermark, rows: rows,
                installs: try installs(app: app, from: from, to: to))
        }
    }

    /// The default link funnel and the app's funnels per cohort day, read from
    /// `report_funnel_summary` (one row per funnel, link and day, steps as arrays).
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func funnel(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> FunnelReport {
        try validate(app: app, from: from, to: to)
        return try run {
            let watermark = try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil
            let result = try connection.query(ReportSQL.funnelSummary(app: app, from: from, to: to))
            try Self.expect(
                result,
                [
                    "funnel_id", "funnel_name", "path", "day", "steps", "step_names", "devices",
                    "conversions_from_previous", "conversions_overall", "median_seconds_from_previous",
                ])
            // One group of step rows per funnel, link and day.
            var groups: [[FunnelStepRow]] = []
            groups.reserveCapacity(result.count)
            for row in result {
                let funnelID = try row[0, as: String.self]
                let funnelName = try row[1, as: String.self]
                let path = try row[2, as: String?.self]
                let day = try Self.day(row, 3)
                let steps = try ReportArrays.ints(row, 4)
                let names = try ReportArrays.strings(row, 5)
                let devices = try ReportArrays.ints(row, 6)
                let fromPrevious = try ReportArrays.strings(row, 7)
                let overall = try ReportArrays.strings(row, 8)
                let medians = try ReportArrays.strings(row, 9)
                guard
                    [names.count, devices.count, fromPrevious.count, overall.count, medians.count].allSatisfy({
                        $0 == steps.count
                    })
                else { throw ReportError.database(message: "report_funnel_summary: step arrays of different lengths") }
                var group: [FunnelStepRow] = []
                group.reserveCapacity(steps.count)
                for index in steps.indices {
                    group.append(
                        FunnelStepRow(
                            funnelID: funnelID, funnelName: funnelName, path: path, day: day, step: steps[index],
                            stepName: names[index], devices: devices[index],
                            conversionFromPrevious: Self.absent(fromPrevious[index]),
                            conversionOverall: Self.absent(overall[index]),
                            medianSecondsFromPrevious: Self.absent(medians[index])))
                }
                if !group.isEmpty { groups.append(group) }
            }
            // The order of `ReportSQL.funnel`: the default funnel first, then by funnel, link (organic
            // last), day.
            groups.sort { left, right in
                let (a, b) = (left[0], right[0])
                if (a.funnelID == "default") != (b.funnelID == "default") { return a.funnelID == "default" }
                if a.funnelID != b.funnelID { return a.funnelID < b.funnelID }
                return Self.precedes(a.path, b.path) ?? (a.day < b.day)
            }
            return FunnelReport(app: app, from: from, to: to, watermark: watermark, rows: groups.flatMap { $0 })
        }
    }

    /// Retention cohorts installed between `from` and `to` (from `report_retention_summary`).
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func retention(app: String, from: ReportDay, to: ReportDay) throws(ReportError) -> RetentionReport {
        try validate(app: app, from: from, to: to)
        return try run {
            let watermark = try connection.query(ReportSQL.watermark).first?["watermark", as: String?.self] ?? nil
            let result = try connection.query(ReportSQL.retentionSummary(app: app, from: from, to: to))
            try Self.expect(
                result,
                ["path", "cohort_day", "cohort_size"] + RetentionRow.days.map { "d\($0)" }
                    + RetentionRow.days.map { "d\($0)_rate" })
            let count = RetentionRow.days.count
            var rows: [RetentionRow] = []
            rows.reserveCapacity(result.count)
            for row in result {
                var retained: [Int?] = []
                var rates: [String?] = []
                retained.reserveCapacity(count)
                rates.reserveCapacity(count)
                for index in 0..<count {
                    retained.append(try row[3 + index, as: Int?.self])
                    rates.append(try row[3 + count + index, as: String?.self])
                }
                rows.append(
                    RetentionRow(
                        path: try row[0, as: String?.self], cohortDay: try Self.day(row, 1),
                        cohortSize: try row[2, as: Int.self], retained: retained, rates: rates))
            }
            rows.sort { left, right in
                Self.precedes(left.path, right.path) ?? (left.cohortDay < right.cohortDay)
            }
            return RetentionReport(app: app, from: from, to: to, watermark: watermark, rows: rows)
        }
    }

    // MARK: - Decoding helpers

    /// Fails unless the result has exactly these columns, in this order (the positions used above).
    static func expect(_ result: QueryResult, _ columns: [String]) throws {
        guard result.columns == columns else {
            throw ReportError.database(message: "unexpected columns \(result.columns), expected \(columns)")
        }
    }

    /// Two parallel arrays (names and values) as a dictionary.
    static func pairs<Value>(_ keys: [String], _ values: [Value]) throws -> [String: Value] {
        guard keys.count == values.count else {
            throw ReportError.database(message: "parallel arrays of different lengths")
        }
        var result: [String: Value] = [:]
        result.reserveCapacity(keys.count)
        for index in keys.indices { result[keys[index]] = values[index] }
        return result
    }

    /// The five platform counts at `position` ... `position + 4` (clicks, universal-link opens,
    /// matched installs, attributed installs, re-engagements).
    static func platform(_ row: Row, from position: Int) throws -> PlatformCounts {
        var counts = PlatformCounts()
        counts.clicks = try row[position, as: Int.self]
        counts.universalLinkOpens = try row[position + 1, as: Int.self]
        counts.matchedInstalls = try row[position + 2, as: Int.self]
        counts.attributedInstalls = try row[position + 3, as: Int.self]
        counts.reengagements = try row[position + 4, as: Int.self]
        return counts
    }

    /// Link order with the organic "link" (nil) last, as SQL's `path NULLS LAST`: nil when equal.
    static func precedes(_ left: String?, _ right: String?) -> Bool? {
        guard left != right else { return nil }
        guard let left else { return false }
        guard let right else { return true }
        return left < right
    }

    /// A `YYYY-MM-DD` column by position.
    static func day(_ row: Row, _ position: Int) throws -> ReportDay {
        let text = try row[position, as: String.self]
        guard let day = ReportDay(iso8601: text) else {
            throw ReportError.database(message: "column #\(position): not a date: \(text)")
        }
        return day
    }
}
