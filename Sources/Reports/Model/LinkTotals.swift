/// One link's totals over a report's days (`report links --by link`, `?by=link`): the per-link
/// daily rows of the range summed, so "which links bring installs" is one row per link instead of
/// one per link and day (30 times fewer for a 30-day report).
package struct LinkTotalRow: Sendable, Equatable {
    /// Link path.
    package var path: String
    /// Days of the range with a row for the link (any activity).
    package var days = 0
    /// The daily counts summed; `reengagements` is the sum of the daily re-engaged devices, so a
    /// device re-engaged on two days counts twice.
    package var clicks = 0
    package var universalLinkOpens = 0
    package var matchedInstalls = 0
    package var attributedInstalls = 0
    package var reengagements = 0
    /// matched_installs / clicks over the range as exact decimal text (6 places, rounded half away
    /// from zero as PostgreSQL's `round`), nil when clicks = 0.
    package var installRate: String?
    /// The platform slices, summed the same way (their maps keep the totals' keys).
    package var ios = PlatformCounts()
    package var android = PlatformCounts()
    /// Actions, retention events and revenue (exact decimal sums, per currency) of attributed devices.
    package var events: NamedValues<Int> = [:]
    package var retentionEvents: NamedValues<Int> = [:]
    package var revenue: NamedValues<String> = [:]

    /// An empty row for a link.
    package init(path: String) { self.path = path }
}

/// One UTM combination's totals for a link over the range.
package struct UTMTotalRow: Sendable, Equatable {
    package var path: String
    package var source: String?
    package var medium: String?
    package var campaign: String?
    package var days = 0
    package var clicks = 0
    package var universalLinkOpens = 0
    package var matchedInstalls = 0
    package var attributedInstalls = 0
    /// matched_installs / clicks over the range, as `LinkTotalRow.installRate`.
    package var installRate: String?
}

/// The per-link report's totals per link over its days: its `links` and `utm` tables, one row per
/// link (and UTM combination) instead of per day.
package struct LinkTotalsReport: RenderableReport, Equatable {
    package var kind: String { "links" }
    package var app: String
    package var from: ReportDay
    package var to: ReportDay
    package var watermark: String?
    package var path: String?
    package var by: String? { "link" }
    /// One row per link with any activity in the range, sorted by path.
    package var rows: [LinkTotalRow]
    /// One row per link and UTM combination, sorted by path, source, medium, campaign (absent first).
    package var utm: [UTMTotalRow]

    /// The totals of `daily`'s rows.
    ///
    /// - Throws: `ReportError.database` when a revenue sum does not fit (over 10^20 or so, in
    ///   the currency's units).
    package init(_ daily: LinkReport) throws(ReportError) {
        app = daily.app
        from = daily.from
        to = daily.to
        watermark = daily.watermark
        path = daily.path
        rows = try Self.linkTotals(daily.rows)
        utm = Self.utmTotals(daily.utm)
    }

    /// Daily rows come sorted by path: each link's rows are summed as a run.
    private static func linkTotals(_ daily: [LinkDayRow]) throws(ReportError) -> [LinkTotalRow] {
        var totals: [LinkTotalRow] = []
        var index = 0
        while index < daily.count {
            var total = LinkTotalRow(path: daily[index].path)
            var sums = MapSums()
            while index < daily.count && ExactText(daily[index].path) == ExactText(total.path) {
                let row = daily[index]
                total.days += 1
                total.clicks += row.clicks
                total.universalLinkOpens += row.universalLinkOpens
                total.matchedInstalls += row.matchedInstalls
                total.attributedInstalls += row.attributedInstalls
                total.reengagements += row.reengagements
                total.ios.add(row.ios)
                total.android.add(row.android)
                try sums.add(row)
                index += 1
            }
            total.installRate = installRate(matched: total.matchedInstalls, clicks: total.clicks)
            sums.write(into: &total)
            totals.append(total)
        }
        return totals
    }

    private static func utmTotals(_ daily: [UTMRow]) -> [UTMTotalRow] {
        struct Key: Hashable {
            var path: ExactText
            var source: ExactText?
            var medium: ExactText?
            var campaign: ExactText?
        }
        var totals: [Key: UTMTotalRow] = [:]
        for row in daily {
            let key = Key(
                path: ExactText(row.path), source: row.source.map(ExactText.init),
                medium: row.medium.map(ExactText.init),
                campaign: row.campaign.map(ExactText.init))
            var total =
                totals[key]
                ?? UTMTotalRow(path: row.path, source: row.source, medium: row.medium, campaign: row.campaign)
            total.days += 1
            total.clicks += row.clicks
            total.universalLinkOpens += row.universalLinkOpens
            total.matchedInstalls += row.matchedInstalls
            total.attributedInstalls += row.attributedInstalls
            totals[key] = total
        }
        // Absent (nil) first, as the daily table's `NULLS FIRST`.
        func precedes(_ left: String?, _ right: String?) -> Bool? {
            let left = left.map(ExactText.init), right = right.map(ExactText.init)
            guard left != right else { return nil }
            guard let left else { return true }
            guard let right else { return false }
            return left < right
        }
        return totals.values.map { row in
            var row = row
            row.installRate = installRate(matched: row.matchedInstalls, clicks: row.clicks)
            return row
        }.sorted { left, right in
            precedes(left.path, right.path) ?? precedes(left.source, right.source)
                ?? precedes(left.medium, right.medium) ?? precedes(left.campaign, right.campaign) ?? false
        }
    }

    /// `round(matched::numeric / clicks, 6)` as PostgreSQL prints it, nil when clicks = 0.
    package static func installRate(matched: Int, clicks: Int) -> String? {
        guard clicks > 0, matched >= 0 else { return nil }
        return ExactRate.rounded6(matched, over: clicks)
    }
}

extension PlatformCounts {
    /// Adds another slice's counts (its maps are summed by `MapSums`).
    fileprivate mutating func add(_ other: PlatformCounts) {
        clicks += other.clicks
        universalLinkOpens += other.universalLinkOpens
        matchedInstalls += other.matchedInstalls
        attributedInstalls += other.attributedInstalls
        reengagements += other.reengagements
    }
}

/// The nine maps of one link's rows summed by name (names told apart by their bytes, as the
/// database's `jsonb` keys are).
private struct MapSums {
    var events: [ExactText: Int] = [:]
    var retentionEvents: [ExactText: Int] = [:]
    var revenue: [ExactText: ExactDecimal] = [:]
    var iosEvents: [ExactText: Int] = [:]
    var androidEvents: [ExactText: Int] = [:]
    var iosRetentionEvents: [ExactText: Int] = [:]
    var androidRetentionEvents: [ExactText: Int] = [:]
    var iosRevenue: [ExactText: ExactDecimal] = [:]
    var androidRevenue: [ExactText: ExactDecimal] = [:]

    mutating func add(_ row: LinkDayRow) throws(ReportError) {
        Self.add(row.events, to: &events)
        Self.add(row.retentionEvents, to: &retentionEvents)
        Self.add(row.ios.events, to: &iosEvents)
        Self.add(row.android.events, to: &androidEvents)
        Self.add(row.ios.retentionEvents, to: &iosRetentionEvents)
        Self.add(row.android.retentionEvents, to: &androidRetentionEvents)
        try Self.add(row.revenue, to: &revenue)
        try Self.add(row.ios.revenue, to: &iosRevenue)
        try Self.add(row.android.revenue, to: &androidRevenue)
    }

    func write(into total: inout LinkTotalRow) {
        total.events = Self.named(events)
        total.retentionEvents = Self.named(retentionEvents)
        total.revenue = Self.named(revenue.mapValues(\.text))
        total.ios.events = Self.named(iosEvents)
        total.android.events = Self.named(androidEvents)
        total.ios.retentionEvents = Self.named(iosRetentionEvents)
        total.android.retentionEvents = Self.named(androidRetentionEvents)
        total.ios.revenue = Self.named(iosRevenue.mapValues(\.text))
        total.android.revenue = Self.named(androidRevenue.mapValues(\.text))
    }

    private static func named<Value: Equatable & Sendable>(_ sums: [ExactText: Value]) -> NamedValues<Value> {
        let sorted = sums.sorted { $0.key < $1.key }
        return NamedValues(sortedNames: sorted.map(\.key.text), values: sorted.map(\.value))
    }

    private static func add(_ values: NamedValues<Int>, to sums: inout [ExactText: Int]) {
        for (name, value) in zip(values.names, values.values) { sums[ExactText(name), default: 0] += value }
    }

    private static func add(_ values: NamedValues<String>, to sums: inout [ExactText: ExactDecimal]) throws(ReportError)
    {
        for (name, text) in zip(values.names, values.values) {
            guard let amount = ExactDecimal(text) else {
                throw .database(message: "revenue \(name): not a decimal: \(text.prefix(40))")
            }
            guard let sum = sums[ExactText(name), default: ExactDecimal.zero] + amount else {
                throw .database(message: "revenue \(name): the total is too large to add up exactly")
            }
            sums[ExactText(name)] = sum
        }
    }
}

/// A decimal as PostgreSQL's `numeric` prints it (`-12.340`): `units` × 10^-`scale`, added exactly
/// with the larger scale, as `numeric` addition (and `sum`) keeps it.
package struct ExactDecimal: Equatable, Sendable {
    package var units: Int128
    package var scale: Int

    package static let zero = ExactDecimal(units: 0, scale: 0)

    /// Parses `[-]digits[.digits]`; nil for anything else (`NaN`, exponents, empty parts).
    package init?(_ text: String) {
        var utf8 = Substring(text).utf8[...]
        let negative = utf8.first == UInt8(ascii: "-")
        if negative { utf8 = utf8.dropFirst() }
        let dot = utf8.firstIndex(of: UInt8(ascii: "."))
        let whole = dot.map { utf8[..<$0] } ?? utf8
        let fraction = dot.map { utf8[utf8.index(after: $0)...] } ?? utf8[utf8.endIndex...]
        guard !whole.isEmpty, dot == nil || !fraction.isEmpty, fraction.count <= 30 else { return nil }
        var units: Int128 = 0
        for byte in [whole, fraction].joined() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflow) = units.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int128(byte - UInt8(ascii: "0")))
            guard !overflow, !overflow2 else { return nil }
            units = sum
        }
        self.init(units: negative ? -units : units, scale: fraction.count)
    }

    package init(units: Int128, scale: Int) {
        self.units = units
        self.scale = scale
    }

    /// The exact sum with the larger scale; nil when it does not fit.
    package static func + (left: ExactDecimal, right: ExactDecimal) -> ExactDecimal? {
        let scale = max(left.scale, right.scale)
        guard let a = left.scaled(to: scale), let b = right.scaled(to: scale) else { return nil }
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : ExactDecimal(units: sum, scale: scale)
    }

    private func scaled(to target: Int) -> Int128? {
        var value = units
        for _ in scale..<target {
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = times
        }
        return value
    }

    /// As PostgreSQL prints it: `scale` decimals, no sign on zero.
    package var text: String {
        let magnitude = units.magnitude
        let digits = String(magnitude)
        let padded = String(repeating: "0", count: max(0, scale + 1 - digits.count)) + digits
        let whole = padded.dropLast(scale)
        let sign = units < 0 ? "-" : ""
        return scale == 0 ? sign + String(whole) : sign + String(whole) + "." + String(padded.suffix(scale))
    }
}
