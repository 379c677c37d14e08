// The tabular form of each report: column names follow the SQL views (docs/reports.md). Each table
// puts a row's values into a `ReportRowWriter`, in the order of its columns.

extension LinkReport {
    package var tables: [ReportTable] {
        let rows = self.rows, utm = self.utm
        return [
            ReportTable(
                name: "links",
                columns: ["path", "day"] + linkCountColumns, count: rows.count
            ) { index, out in
                // Read in place: a copy of the row (`let row = rows[index]`) retained and released its
                // ~20 strings and arrays, a tenth of the JSON's time.
                rows.withUnsafeBufferPointer { rows in
                    out.text(rows[index].path)
                    out.text(rows[index].day.iso8601)
                    out.linkCounts(rows[index])
                }
            },
            ReportTable(name: "utm", columns: ["path", "day"] + utmCountColumns, count: utm.count) { index, out in
                let row = utm[index]
                out.text(row.path)
                out.text(row.day.iso8601)
                out.utmCounts(row)
            },
        ]
    }
}

extension LinkTotalsReport {
    package var tables: [ReportTable] {
        let rows = self.rows, utm = self.utm
        return [
            ReportTable(
                name: "links",
                columns: ["path", "days"] + linkCountColumns, count: rows.count
            ) { index, out in
                rows.withUnsafeBufferPointer { rows in
                    out.text(rows[index].path)
                    out.int(rows[index].days)
                    out.linkCounts(rows[index])
                }
            },
            ReportTable(name: "utm", columns: ["path", "days"] + utmCountColumns, count: utm.count) { index, out in
                let row = utm[index]
                out.text(row.path)
                out.int(row.days)
                out.utmCounts(row)
            },
        ]
    }
}

/// The per-link columns after a row's key (`path`, `day` or `days`), daily and totals alike.
let linkCountColumns = [
    "clicks", "universal_link_opens", "matched_installs", "attributed_installs", "install_rate", "reengagements",
    "clicks_ios", "clicks_android", "universal_link_opens_ios", "universal_link_opens_android",
    "matched_installs_ios", "matched_installs_android", "attributed_installs_ios", "attributed_installs_android",
    "reengagements_ios", "reengagements_android", "events", "retention_events", "revenue", "events_ios",
    "events_android", "retention_events_ios", "retention_events_android", "revenue_ios", "revenue_android",
]

/// What a per-link row has beside its key: a day's counts or their totals.
protocol LinkCounts {
    var clicks: Int { get }
    var universalLinkOpens: Int { get }
    var matchedInstalls: Int { get }
    var attributedInstalls: Int { get }
    var installRate: String? { get }
    var reengagements: Int { get }
    var ios: PlatformCounts { get }
    var android: PlatformCounts { get }
    var events: NamedValues<Int> { get }
    var retentionEvents: NamedValues<Int> { get }
    var revenue: NamedValues<String> { get }
}

extension LinkDayRow: LinkCounts {}
extension LinkTotalRow: LinkCounts {}

extension ReportRowWriter {
    /// Puts `row`'s values of `linkCountColumns`, in order.
    fileprivate mutating func linkCounts(_ row: borrowing some LinkCounts) {
        int(row.clicks)
        int(row.universalLinkOpens)
        int(row.matchedInstalls)
        int(row.attributedInstalls)
        decimal(row.installRate)
        int(row.reengagements)
        int(row.ios.clicks)
        int(row.android.clicks)
        int(row.ios.universalLinkOpens)
        int(row.android.universalLinkOpens)
        int(row.ios.matchedInstalls)
        int(row.android.matchedInstalls)
        int(row.ios.attributedInstalls)
        int(row.android.attributedInstalls)
        int(row.ios.reengagements)
        int(row.android.reengagements)
        counts(row.events)
        counts(row.retentionEvents)
        amounts(row.revenue)
        counts(row.ios.events)
        counts(row.android.events)
        counts(row.ios.retentionEvents)
        counts(row.android.retentionEvents)
        amounts(row.ios.revenue)
        amounts(row.android.revenue)
    }
}

/// The UTM columns after a row's key (`path`, `day` or `days`), daily and totals alike.
let utmCountColumns = [
    "utm_source", "utm_medium", "utm_campaign", "clicks", "universal_link_opens", "matched_installs",
    "attributed_installs", "install_rate",
]

/// What a UTM row has beside its key: a day's counts or their totals.
protocol UTMCounts {
    var source: String? { get }
    var medium: String? { get }
    var campaign: String? { get }
    var clicks: Int { get }
    var universalLinkOpens: Int { get }
    var matchedInstalls: Int { get }
    var attributedInstalls: Int { get }
    var installRate: String? { get }
}

extension UTMRow: UTMCounts {}
extension UTMTotalRow: UTMCounts {}

extension ReportRowWriter {
    /// Puts `row`'s values of `utmCountColumns`, in order.
    fileprivate mutating func utmCounts(_ row: borrowing some UTMCounts) {
        text(row.source)
        text(row.medium)
        text(row.campaign)
        int(row.clicks)
        int(row.universalLinkOpens)
        int(row.matchedInstalls)
        int(row.attributedInstalls)
        decimal(row.installRate)
    }
}

extension AttributionReport {
    /// The attribution table's columns (also `AttributionLines`').
    static let columns = [
        "path", "day", "matched_installs", "attributed_installs", "cohort_actions", "activity_actions",
        "last_touch_opens", "cohort_events", "activity_events", "cohort_revenue", "activity_revenue",
    ]

    package var tables: [ReportTable] {
        let rows = self.rows
        return [
            ReportTable(name: "attribution", columns: Self.columns, count: rows.count) { index, out in
                let row = rows[index]
                out.text(row.path)
                out.text(row.day.iso8601)
                out.int(row.matchedInstalls)
                out.int(row.attributedInstalls)
                out.int(row.cohortActions)
                out.int(row.activityActions)
                out.int(row.lastTouchOpens)
                out.counts(row.cohortEvents)
                out.counts(row.activityEvents)
                out.amounts(row.cohortRevenue)
                out.amounts(row.activityRevenue)
            },
            Self.installsTable(installs),
        ]
    }

    /// The installs table of `installs` (also `AttributionLines.tables(installs:)`').
    static func installsTable(_ installs: [InstallsRow]) -> ReportTable {
        ReportTable(
            name: "installs",
            columns: ["day", "installs", "attributed_installs", "organic_installs", "unattributable_installs"],
            count: installs.count
        ) { index, out in
            let row = installs[index]
            out.text(row.day.iso8601)
            out.int(row.installs)
            out.int(row.attributedInstalls)
            out.int(row.organicInstalls)
            out.int(row.unattributableInstalls)
        }
    }
}

extension FunnelReport {
    /// The funnel table's columns (also `FunnelLines`').
    static let columns = [
        "funnel_id", "funnel_name", "path", "day", "step", "step_name", "devices", "conversion_from_previous",
        "conversion_overall", "median_seconds_from_previous",
    ]

    package var tables: [ReportTable] {
        let rows = self.rows
        return [
            ReportTable(
                name: "funnel",
                columns: Self.columns, count: rows.count
            ) { index, out in
                let row = rows[index]
                out.text(row.funnelID)
                out.text(row.funnelName)
                out.text(row.path)
                out.text(row.day.iso8601)
                out.int(row.step)
                out.text(row.stepName)
                out.int(row.devices)
                out.decimal(row.conversionFromPrevious)
                out.decimal(row.conversionOverall)
                out.decimal(row.medianSecondsFromPrevious)
            }
        ]
    }
}

extension RetentionReport {
    package var tables: [ReportTable] {
        let days = RetentionRow.days
        let rows = self.rows
        return [
            ReportTable(
                name: "retention",
                columns: ["path", "cohort_day", "cohort_size"] + days.map { "d\($0)" } + days.map { "d\($0)_rate" },
                count: rows.count
            ) { index, out in
                let row = rows[index]
                out.text(row.path)
                out.text(row.cohortDay.iso8601)
                out.int(row.cohortSize)
                for value in row.retained { out.int(value) }
                for rate in row.rates { out.decimal(rate) }
            }
        ]
    }
}
