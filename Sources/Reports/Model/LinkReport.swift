/// Counts of one platform slice of a per-link day.
package struct PlatformCounts: Sendable, Equatable {
    /// Web clicks.
    package var clicks = 0
    /// Universal-link opens.
    package var universalLinkOpens = 0
    /// Matched installs.
    package var matchedInstalls = 0
    /// Attributed installs.
    package var attributedInstalls = 0
    /// Re-engagements.
    package var reengagements = 0
    /// Actions of attributed devices on this platform, by event name: the names of the row's
    /// `events`, each with this platform's share (0 when none).
    package var events: NamedValues<Int> = [:]
    /// Retention events, by name, as `events`.
    package var retentionEvents: NamedValues<Int> = [:]
    /// Purchase minus refund revenue, per currency of the row's `revenue` (exact decimal text).
    package var revenue: NamedValues<String> = [:]

    /// All zero.
    package init() {}
}

/// One row of the per-link daily report (reports.md "Per-link daily report").
package struct LinkDayRow: Sendable, Equatable {
    /// Link path.
    package var path: String
    /// Day in the app's time zone.
    package var day: ReportDay
    /// Web clicks that day.
    package var clicks = 0
    /// Universal-link clicks that day.
    package var universalLinkOpens = 0
    /// Matches that day whose click is on the link.
    package var matchedInstalls = 0
    /// Devices installed that day attributed to the link.
    package var attributedInstalls = 0
    /// matched_installs / clicks as exact decimal text (6 places), nil when clicks = 0.
    package var installRate: String?
    /// Re-engaged devices.
    package var reengagements = 0
    /// The iOS slice.
    package var ios = PlatformCounts()
    /// The Android slice.
    package var android = PlatformCounts()
    /// Actions of attributed devices that day, by event name.
    package var events: NamedValues<Int> = [:]
    /// Retention events of attributed devices that day, by name.
    package var retentionEvents: NamedValues<Int> = [:]
    /// Purchase minus refund revenue of attributed devices that day, per currency (exact decimal text).
    package var revenue: NamedValues<String> = [:]

    /// An empty row for a link and day.
    package init(path: String, day: ReportDay) {
        self.path = path
        self.day = day
    }
}

/// Click-side counts of one UTM breakdown of a link and day.
package struct UTMRow: Sendable, Equatable {
    /// Link path.
    package var path: String
    /// Day.
    package var day: ReportDay
    /// `utm_source`, nil when absent.
    package var source: String?
    /// `utm_medium`, nil when absent.
    package var medium: String?
    /// `utm_campaign`, nil when absent.
    package var campaign: String?
    /// Web clicks.
    package var clicks: Int
    /// Universal-link opens.
    package var universalLinkOpens: Int
    /// Matched installs.
    package var matchedInstalls: Int
    /// Attributed installs.
    package var attributedInstalls: Int
    /// matched_installs / clicks as exact decimal text (6 places), nil when clicks = 0.
    package var installRate: String?

    /// Makes a row.
    package init(
        path: String, day: ReportDay, source: String?, medium: String?, campaign: String?, clicks: Int,
        universalLinkOpens: Int, matchedInstalls: Int, attributedInstalls: Int, installRate: String? = nil
    ) {
        self.path = path
        self.day = day
        self.source = source
        self.medium = medium
        self.campaign = campaign
        self.clicks = clicks
        self.universalLinkOpens = universalLinkOpens
        self.matchedInstalls = matchedInstalls
        self.attributedInstalls = attributedInstalls
        self.installRate = installRate
    }
}

/// The per-link daily report of an app for a range of days.
package struct LinkReport: RenderableReport, Equatable {
    package var kind: String { "links" }
    package var app: String
    package var from: ReportDay
    package var to: ReportDay
    package var watermark: String?
    /// The one link the report was asked for (`--path`, `?path=`), nil for every link.
    package var path: String? = nil
    /// One row per link and day with any activity, sorted by path then day.
    package var rows: [LinkDayRow]
    /// UTM breakdown rows, sorted by path, day, source, medium, campaign.
    package var utm: [UTMRow]

    /// Makes a report.
    package init(app: String, from: ReportDay, to: ReportDay, watermark: String?, rows: [LinkDayRow], utm: [UTMRow]) {
        self.app = app
        self.from = from
        self.to = to
        self.watermark = watermark
        self.rows = rows
        self.utm = utm
    }
}
