/// One link and day of the attribution report (reports.md "Attribution report").
package struct AttributionRow: Sendable, Equatable {
    /// Link path.
    package var path: String
    /// Day: the install date for the cohort columns, the event date for the activity columns.
    package var day: ReportDay
    /// Matches that day whose click is on the link.
    package var matchedInstalls = 0
    /// Devices installed that day attributed to the link.
    package var attributedInstalls = 0
    /// Actions (all time, as loaded) of the devices attributed to the link and installed that day.
    package var cohortActions = 0
    /// Actions that day of devices attributed to the link.
    package var activityActions = 0
    /// Actions that day whose open_click_id is a click on the link (any device).
    package var lastTouchOpens = 0
    /// cohort_actions by event name. `NamedValues`, as in the per-link rows (since the twenty-first
    /// session; dictionaries before): a row decoded from a summary line shares its name list's sorted
    /// names and JSON keys, so writing it sorts and encodes no names.
    package var cohortEvents: NamedValues<Int> = [:]
    /// activity_actions by event name.
    package var activityEvents: NamedValues<Int> = [:]
    /// Revenue of the install-date cohort, per currency (exact decimal text).
    package var cohortRevenue: NamedValues<String> = [:]
    /// Revenue of the day's activity, per currency.
    package var activityRevenue: NamedValues<String> = [:]

    /// An empty row.
    package init(path: String, day: ReportDay) {
        self.path = path
        self.day = day
    }
}

/// Installs of an app on one day.
package struct InstallsRow: Sendable, Equatable {
    /// Install day.
    package var day: ReportDay
    /// Every device installed that day.
    package var installs: Int
    /// Attributed to some link.
    package var attributedInstalls: Int
    /// Not attributed (includes the unattributable ones).
    package var organicInstalls: Int
    /// Organic devices whose SDK never sent an attribution object.
    package var unattributableInstalls: Int

    /// Makes a row.
    package init(
        day: ReportDay, installs: Int, attributedInstalls: Int, organicInstalls: Int, unattributableInstalls: Int
    ) {
        self.day = day
        self.installs = installs
        self.attributedInstalls = attributedInstalls
        self.organicInstalls = organicInstalls
        self.unattributableInstalls = unattributableInstalls
    }
}

/// The attribution report of an app for a range of days.
package struct AttributionReport: RenderableReport, Equatable {
    package var kind: String { "attribution" }
    package var app: String
    package var from: ReportDay
    package var to: ReportDay
    package var watermark: String?
    /// The one link the report was asked for (`--path`, `?path=`), nil for every link.
    package var path: String? = nil
    /// Per link and day, sorted by path then day.
    package var rows: [AttributionRow]
    /// App-wide installs per day (organic and unattributable beside attributed), sorted by day.
    package var installs: [InstallsRow]

    /// Makes a report.
    package init(
        app: String, from: ReportDay, to: ReportDay, watermark: String?, rows: [AttributionRow], installs: [InstallsRow]
    ) {
        self.app = app
        self.from = from
        self.to = to
        self.watermark = watermark
        self.rows = rows
        self.installs = installs
    }
}
