import Postgres

/// The reports read from the summaries of sql/054 (one row per link and day, breakdowns as arrays).
/// A 30-day report at 1,000 links is ~30k such rows, so each row is read as one packed text column,
/// written with the row (sql/055, `ReportSQL.linkSummary`), and `ReportPacked` decodes its bytes into
/// scratch buffers reused by every row.
extension ReportService {
    /// The per-link daily report (with platform splits, events, revenue and the UTM breakdown), read
    /// from `report_link_summary` in one query.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter` when `from > to`, `.database`.
    package func links(
        app: String, from: ReportDay, to: ReportDay, path: String? = nil
    ) throws(ReportError) -> LinkReport {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            let result = try connection.query(ReportSQL.linkSummary(app: app, from: from, to: to, path: path))
            try Self.expect(result, ["line", "platform_line"])
            var rows: [LinkDayRow] = []
            rows.reserveCapacity(result.count)
            var utm: [UTMRow] = []
            utm.reserveCapacity(result.count * 4)
            // Element buffers reused by every row.
            var lists = ReportNameLists(), countScratch: [Int] = [], amountScratch: [String] = []
            var utmArrays = UTMArrays()
            // In (path, day) order, so rows and UTM rows are appended where they belong.
            try ReportPacked.forEachLinePairByPathAndDay(result, what: "report_link_summary_lines") {
                line, platforms, path, day in
                var link = LinkDayRow(path: path, day: day)
                link.clicks = try line.int()
                link.universalLinkOpens = try line.int()
                link.matchedInstalls = try line.int()
                link.attributedInstalls = try line.int()
                link.reengagements = try line.int()
                link.ios = try Self.platform(&line)
                link.android = try Self.platform(&line)
                link.installRate = Self.absent(try line.field())
                // Every map's values of the row go into one array of counts and one of amounts
                // (sliced below, once both are complete: a slice taken earlier would make the next
                // append copy the array).
                let eventNames = try lists.next(&line)
                var counts: [Int] = []
                counts.reserveCapacity(3 * eventNames.count + 6)
                let events = try Self.append(&line, eventNames, to: &counts, &countScratch)
                let retentionNames = try lists.next(&line)
                let retentionEvents = try Self.append(&line, retentionNames, to: &counts, &countScratch)
                let currencies = try lists.next(&line)
                var amounts: [String] = []
                amounts.reserveCapacity(3 * currencies.count)
                let revenue = try Self.append(&line, currencies, to: &amounts, &amountScratch)
                try utmArrays.read(&line, path: path, day: day, into: &utm)
                // The platform splits (sql/066), parallel to the names and currencies read above.
                let iosEvents = try Self.append(&platforms, eventNames, to: &counts, &countScratch, sameAs: events)
                let androidEvents = try Self.append(
                    &platforms, eventNames, to: &counts, &countScratch, sameAs: events)
                let iosRetention = try Self.append(
                    &platforms, retentionNames, to: &counts, &countScratch, sameAs: retentionEvents)
                let androidRetention = try Self.append(
                    &platforms, retentionNames, to: &counts, &countScratch, sameAs: retentionEvents)
                let iosRevenue = try Self.append(
                    &platforms, currencies, to: &amounts, &amountScratch, sameAs: revenue)
                let androidRevenue = try Self.append(
                    &platforms, currencies, to: &amounts, &amountScratch, sameAs: revenue)
                link.events = Self.named(eventNames, counts[events])
                link.retentionEvents = Self.named(retentionNames, counts[retentionEvents])
                link.revenue = Self.named(currencies, amounts[revenue])
                link.ios.events = Self.named(eventNames, counts[iosEvents])
                link.android.events = Self.named(eventNames, counts[androidEvents])
                link.ios.retentionEvents = Self.named(retentionNames, counts[iosRetention])
                link.android.retentionEvents = Self.named(retentionNames, counts[androidRetention])
                link.ios.revenue = Self.named(currencies, amounts[iosRevenue])
                link.android.revenue = Self.named(currencies, amounts[androidRevenue])
                rows.append(link)
            }
            var report = LinkReport(app: app, from: from, to: to, watermark: watermark, rows: rows, utm: utm)
            report.path = path
            return report
        }
    }

    /// Report `kind` as served from its stored lines (a `LinesReport`): the app and days checked as
    /// the rows' reads check them, then `tables`, which queries the lines and checks every one of
    /// them before a byte of the report is written. What `report(kind, ...)` answers for the
    /// per-link, funnel and attribution reports.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    func servedFromLines(
        _ kind: ReportKind, app: String, from: ReportDay, to: ReportDay, path: String?,
        tables: () throws -> [ReportTable]
    ) throws(ReportError) -> LinesReport {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            LinesReport(
                kind: kind.rawValue, app: app, from: from, to: to, watermark: watermark, path: path,
                tables: try tables())
        }
    }

    /// The attribution report: per link and day (from `report_attribution_summary`, one row per link
    /// and day), plus app-wide installs per day.
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func attribution(
        app: String, from: ReportDay, to: ReportDay, path: String? = nil
    ) throws(ReportError) -> AttributionReport {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            let result = try connection.query(ReportSQL.attributionSummary(app: app, from: from, to: to, path: path))
            try Self.expect(result, ["line"])
            var rows: [AttributionRow] = []
            rows.reserveCapacity(result.count)
            var lists = ReportNameLists(), countScratch: [Int] = [], amountScratch: [String] = []
            try ReportPacked.forEachLineByPathAndDay(result, what: "report_attribution_summary_lines") {
                line, path, day in
                var value = AttributionRow(path: path, day: day)
                value.matchedInstalls = try line.int()
                value.attributedInstalls = try line.int()
                value.cohortActions = try line.int()
                value.activityActions = try line.int()
                value.lastTouchOpens = try line.int()
                // The row's two maps of counts share one array, and its two of amounts another (sliced
                // once both are complete), as a per-link row's maps do: an array per map, copied out
                // of a scratch buffer it then shared, was four allocations per row and a fifth for the
                // scratch buffer's next use.
                let cohortNames = try lists.next(&line)
                var counts: [Int] = []
                counts.reserveCapacity(2 * cohortNames.count)
                let cohortEvents = try Self.append(&line, cohortNames, to: &counts, &countScratch)
                let cohortCurrencies = try lists.next(&line)
                var amounts: [String] = []
                amounts.reserveCapacity(2 * cohortCurrencies.count)
                let cohortRevenue = try Self.append(&line, cohortCurrencies, to: &amounts, &amountScratch)
                let activityNames = try lists.next(&line)
                let activityEvents = try Self.append(&line, activityNames, to: &counts, &countScratch)
                let activityCurrencies = try lists.next(&line)
                let activityRevenue = try Self.append(&line, activityCurrencies, to: &amounts, &amountScratch)
                value.cohortEvents = Self.named(cohortNames, counts[cohortEvents])
                value.cohortRevenue = Self.named(cohortCurrencies, amounts[cohortRevenue])
                value.activityEvents = Self.named(activityNames, counts[activityEvents])
                value.activityRevenue = Self.named(activityCurrencies, amounts[activityRevenue])
                rows.append(value)
            }
            // The installs per day stay app-wide with a path: an install has no link of its own
            // unless attributed, and the attributed ones are the rows' `attributed_installs`.
            var report = AttributionReport(
                app: app, from: from, to: to, watermark: watermark, rows: rows,
                installs: try installs(app: app, from: from, to: to))
            report.path = path
            return report
        }
    }

    /// The default link funnel and the app's funnels per cohort day, read from
    /// `report_funnel_summary` (one row per funnel, link and day, steps as arrays).
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func funnel(
        app: String, from: ReportDay, to: ReportDay, path: String? = nil
    ) throws(ReportError) -> FunnelReport {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            let result = try connection.query(ReportSQL.funnelSummary(app: app, from: from, to: to, path: path))
            try Self.expect(result, ["line"])
            // One group of step rows per funnel, link and day.
            var groups: [[FunnelStepRow]] = []
            groups.reserveCapacity(result.count)
            var steps: [Int] = [], names: [String] = [], devices: [Int] = []
            var fromPrevious: [String] = [], overall: [String] = [], medians: [String] = []
            try ReportPacked.forEachLine(result, what: "report_funnel_summary_lines") { line in
                let funnelID = try line.counted()
                let funnelName = try line.counted()
                let day = try line.day()
                steps.removeAll(keepingCapacity: true)
                names.removeAll(keepingCapacity: true)
                devices.removeAll(keepingCapacity: true)
                fromPrevious.removeAll(keepingCapacity: true)
                overall.removeAll(keepingCapacity: true)
                medians.removeAll(keepingCapacity: true)
                try line.ints(into: &steps)
                try line.strings(into: &names)
                try line.ints(into: &devices)
                try line.strings(into: &fromPrevious)
                try line.strings(into: &overall)
                try line.strings(into: &medians)
                // `-` for the organic "link", else `+` and the path (as `FunnelLines` reads it).
                let rest = line.rest()
                guard rest == "-" || (rest.utf8.count > 1 && rest.utf8.first == UInt8(ascii: "+")) else {
                    throw line.malformed()
                }
                // Dropped as a byte: a path that starts with a combining mark makes one character with
                // the `+` (until 2026-12-03 `dropFirst()` dropped the mark with it).
                let path = rest == "-" ? nil : String(decoding: rest.utf8.dropFirst(), as: UTF8.self)
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
            var report = FunnelReport(app: app, from: from, to: to, watermark: watermark, rows: groups.flatMap { $0 })
            report.path = path
            return report
        }
    }

    /// Retention cohorts installed between `from` and `to` (from `report_retention_summary`).
    ///
    /// - Throws: `ReportError.unknownApp`, `.invalidParameter`, `.database`.
    package func retention(
        app: String, from: ReportDay, to: ReportDay, path: String? = nil
    ) throws(ReportError) -> RetentionReport {
        let watermark = try validate(app: app, from: from, to: to)
        return try run {
            let result = try connection.query(ReportSQL.retentionSummary(app: app, from: from, to: to, path: path))
            try Self.expect(result, ["line"])
            let count = RetentionRow.days.count
            var rows: [RetentionRow] = []
            rows.reserveCapacity(result.count)
            try ReportPacked.forEachLineByPathAndDay(result, what: "report_retention_summary") {
                (line: inout ReportPacked, path: String?, cohortDay) in
                let cohortSize = try line.int()
                // The view keeps only cohorts with installs; a rate it could not print is a broken line.
                guard cohortSize > 0 else { throw line.malformed() }
                var retained: [Int?] = []
                var rates: [String?] = []
                retained.reserveCapacity(count)
                rates.reserveCapacity(count)
                for _ in 0..<count {
                    let returned = try line.optionalInt()
                    retained.append(returned)
                    guard let returned else {
                        rates.append(nil)
                        continue
                    }
                    guard let rate = ExactRate.rounded6(returned, over: cohortSize) else { throw line.malformed() }
                    rates.append(rate)
                }
                rows.append(
                    RetentionRow(
                        path: path, cohortDay: cohortDay, cohortSize: cohortSize, retained: retained, rates: rates))
            }
            var report = RetentionReport(app: app, from: from, to: to, watermark: watermark, rows: rows)
            report.path = path
            return report
        }
    }

    // MARK: - Decoding helpers

    /// Fails unless the result has exactly these columns, in this order (the positions used above).
    static func expect(_ result: QueryResult, _ columns: [String]) throws {
        guard result.columns == columns else {
            throw ReportError.database(message: "unexpected columns \(result.columns), expected \(columns)")
        }
    }

    /// Named values of a decoded name list: its shared names and keys, and `values` (parallel to
    /// its sorted names).
    static func named<Value>(_ names: ReportNameLists.List, _ values: ArraySlice<Value>) -> NamedValues<Value> {
        NamedValues(sortedNames: names.names, values: values, keys: names.keys)
    }

    /// Appends the next packed array, parallel to `names`, to `values` in the order of the list's
    /// sorted names, and returns where it is; `scratch` is a buffer for reading it. With `sameAs`
    /// (a platform split of that total), equal values are not kept twice: the total's place is
    /// returned (a link-day whose devices are all on one platform).
    static func append<Value: PackedElement>(
        _ line: inout ReportPacked, _ names: ReportNameLists.List, to values: inout [Value],
        _ scratch: inout [Value], sameAs total: Range<Int>? = nil
    ) throws -> Range<Int> {
        try read(&line, parallelTo: names, into: &scratch)
        let start = values.count
        if let order = names.order {
            for position in order { values.append(scratch[position]) }
        } else {
            values.append(contentsOf: scratch)
        }
        let range = start..<values.count
        if let total, values[range] == values[total] {
            values.removeSubrange(range)
            return total
        }
        return range
    }

    /// Reads the next packed array into `scratch` (emptied first), in the list's own order; it must
    /// have one value per name.
    private static func read<Value: PackedElement>(
        _ line: inout ReportPacked, parallelTo names: ReportNameLists.List, into scratch: inout [Value]
    ) throws {
        scratch.removeAll(keepingCapacity: true)
        try Value.read(&line, into: &scratch)
        guard scratch.count == names.count else {
            throw ReportError.database(message: "parallel arrays of different lengths")
        }
    }

    /// The five packed platform counts (clicks, universal-link opens, matched installs, attributed
    /// installs, re-engagements).
    static func platform(_ line: inout ReportPacked) throws -> PlatformCounts {
        var counts = PlatformCounts()
        counts.clicks = try line.int()
        counts.universalLinkOpens = try line.int()
        counts.matchedInstalls = try line.int()
        counts.attributedInstalls = try line.int()
        counts.reengagements = try line.int()
        return counts
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

/// The UTM breakdown of one `report_link_summary` line: parallel arrays (source, medium, campaign,
/// and per element its counts and install rate), read into buffers reused by every line.
private struct UTMArrays {
    var sources: [String] = [], mediums: [String] = [], campaigns: [String] = [], rates: [String] = []
    var clicks: [Int] = [], opens: [Int] = [], matched: [Int] = [], attributed: [Int] = []

    /// Reads the line's UTM arrays and appends a `UTMRow` of `path` and `day` per element to `rows`.
    /// - Throws: `ReportError.database` when the arrays' lengths differ.
    mutating func read(_ line: inout ReportPacked, path: String, day: ReportDay, into rows: inout [UTMRow]) throws {
        sources.removeAll(keepingCapacity: true)
        mediums.removeAll(keepingCapacity: true)
        campaigns.removeAll(keepingCapacity: true)
        clicks.removeAll(keepingCapacity: true)
        opens.removeAll(keepingCapacity: true)
        matched.removeAll(keepingCapacity: true)
        attributed.removeAll(keepingCapacity: true)
        rates.removeAll(keepingCapacity: true)
        try line.strings(into: &sources)
        try line.strings(into: &mediums)
        try line.strings(into: &campaigns)
        try line.ints(into: &clicks)
        try line.ints(into: &opens)
        try line.ints(into: &matched)
        try line.ints(into: &attributed)
        try line.strings(into: &rates)
        guard
            mediums.count == sources.count, campaigns.count == sources.count, clicks.count == sources.count,
            opens.count == sources.count, matched.count == sources.count,
            attributed.count == sources.count, rates.count == sources.count
        else { throw ReportError.database(message: "report_link_summary: UTM arrays of different lengths") }
        for index in sources.indices {
            rows.append(
                UTMRow(
                    path: path, day: day, source: ReportService.absent(sources[index]),
                    medium: ReportService.absent(mediums[index]), campaign: ReportService.absent(campaigns[index]),
                    clicks: clicks[index], universalLinkOpens: opens[index], matchedInstalls: matched[index],
                    attributedInstalls: attributed[index], installRate: ReportService.absent(rates[index])))
        }
    }
}
