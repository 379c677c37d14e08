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
            sums[ExactText(name)] = sums[ExactText(name), default: ExactDecimal.zero] + amount
        }
    }
}

/// A decimal as PostgreSQL's `numeric` prints it (`-12.340`): a magnitude × 10^-`scale` and a
/// sign, added exactly with the larger scale, as `numeric` addition (and `sum`) keeps it. Of any
/// size, as `numeric`: until 2026-12-05 an `Int128` held it, and one revenue amount of more than 38
/// digits, or 30 decimals, failed every `by=link` report over its day (503, "retry later").
package struct ExactDecimal: Equatable, Sendable {
    /// The magnitude in base 10^9, least significant limb first, without high zero limbs (zero: none).
    private var limbs: [UInt32]
    /// Never true for zero.
    private var negative: Bool
    /// Decimal places.
    package private(set) var scale: Int

    private static let base: UInt64 = 1_000_000_000

    package static let zero = ExactDecimal(limbs: [], negative: false, scale: 0)

    /// Parses `[-]digits[.digits]`; nil for anything else (`NaN`, exponents, empty parts).
    package init?(_ text: String) {
        var bytes = Array(text.utf8)[...]
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { bytes = bytes.dropFirst() }
        let dot = bytes.firstIndex(of: UInt8(ascii: "."))
        let whole = dot.map { bytes[..<$0] } ?? bytes
        let fraction = dot.map { bytes[($0 + 1)...] } ?? bytes[bytes.endIndex...]
        guard !whole.isEmpty, dot == nil || !fraction.isEmpty else { return nil }
        let digits = Array(whole) + Array(fraction)
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        self.init(digits: digits, negative: negative, scale: fraction.count)
    }

    /// `units` × 10^-`scale`.
    package init(units: Int128, scale: Int) {
        self.init(digits: Array(String(units.magnitude).utf8), negative: units < 0, scale: scale)
    }

    /// From ASCII digits, most significant first.
    private init(digits: [UInt8], negative: Bool, scale: Int) {
        var limbs: [UInt32] = []
        var end = digits.count
        while end > 0 {
            let start = max(0, end - 9)
            limbs.append(digits[start..<end].reduce(0) { $0 * 10 + UInt32($1 - UInt8(ascii: "0")) })
            end = start
        }
        self.init(limbs: limbs, negative: negative, scale: scale)
    }

    private init(limbs: [UInt32], negative: Bool, scale: Int) {
        var limbs = limbs
        while limbs.last == 0 { limbs.removeLast() }
        self.limbs = limbs
        self.negative = negative && !limbs.isEmpty
        self.scale = scale
    }

    /// The exact sum, with the larger scale.
    package static func + (left: ExactDecimal, right: ExactDecimal) -> ExactDecimal {
        let scale = max(left.scale, right.scale)
        let a = left.scaled(to: scale)
        let b = right.scaled(to: scale)
        if a.negative == b.negative {
            return ExactDecimal(limbs: add(a.limbs, b.limbs), negative: a.negative, scale: scale)
        }
        return isLess(a.limbs, b.limbs)
            ? ExactDecimal(limbs: subtract(b.limbs, a.limbs), negative: b.negative, scale: scale)
            : ExactDecimal(limbs: subtract(a.limbs, b.limbs), negative: a.negative, scale: scale)
    }

    /// The same value with `target` (>= `scale`) decimal places.
    private func scaled(to target: Int) -> ExactDecimal {
        var limbs = self.limbs
        var left = target - scale
        while left > 0 && !limbs.isEmpty {
            let step = min(left, 9)
            var factor: UInt64 = 1
            for _ in 0..<step { factor *= 10 }
            var carry: UInt64 = 0
            for index in limbs.indices {
                let product = UInt64(limbs[index]) * factor + carry
                limbs[index] = UInt32(product % Self.base)
                carry = product / Self.base
            }
            if carry > 0 { limbs.append(UInt32(carry)) }
            left -= step
        }
        return ExactDecimal(limbs: limbs, negative: negative, scale: target)
    }

    private static func add(_ a: [UInt32], _ b: [UInt32]) -> [UInt32] {
        var sum: [UInt32] = []
        sum.reserveCapacity(max(a.count, b.count) + 1)
        var carry: UInt64 = 0
        for index in 0..<max(a.count, b.count) {
            let total = UInt64(index < a.count ? a[index] : 0) + UInt64(index < b.count ? b[index] : 0) + carry
            sum.append(UInt32(total % base))
            carry = total / base
        }
        if carry > 0 { sum.append(UInt32(carry)) }
        return sum
    }

    /// `a` - `b`, for `a` >= `b`.
    private static func subtract(_ a: [UInt32], _ b: [UInt32]) -> [UInt32] {
        var difference: [UInt32] = []
        difference.reserveCapacity(a.count)
        var borrow: Int64 = 0
        for index in a.indices {
            var value = Int64(a[index]) - Int64(index < b.count ? b[index] : 0) - borrow
            borrow = value < 0 ? 1 : 0
            if value < 0 { value += Int64(base) }
            difference.append(UInt32(value))
        }
        return difference
    }

    /// Whether magnitude `a` < `b` (both without high zero limbs).
    private static func isLess(_ a: [UInt32], _ b: [UInt32]) -> Bool {
        guard a.count == b.count else { return a.count < b.count }
        for index in a.indices.reversed() where a[index] != b[index] { return a[index] < b[index] }
        return false
    }

    /// As PostgreSQL prints it: `scale` decimals, no sign on zero.
    package var text: String {
        var digits = limbs.last.map { String($0) } ?? "0"
        for limb in limbs.dropLast().reversed() {
            let part = String(limb)
            digits += String(repeating: "0", count: 9 - part.count) + part
        }
        let padded = String(repeating: "0", count: max(0, scale + 1 - digits.count)) + digits
        let whole = padded.dropLast(scale)
        let sign = negative ? "-" : ""
        return scale == 0 ? sign + String(whole) : sign + String(whole) + "." + String(padded.suffix(scale))
    }
}
