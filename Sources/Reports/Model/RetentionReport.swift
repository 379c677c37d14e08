/// One retention cohort (reports.md "Retention").
package struct RetentionRow: Sendable, Equatable {
    /// The N of the columns, in order.
    package static let days = [1, 3, 7, 14, 30]
    /// Link path; nil for organic devices.
    package var path: String?
    /// Install day.
    package var cohortDay: ReportDay
    /// Devices installed that day (attributed to the link, or organic).
    package var cohortSize: Int
    /// Devices with an app_open on exactly day N (N in `days`); nil while day N is not reached.
    package var retained: [Int?]
    /// retained / cohort_size (exact decimal text), nil while not reached.
    package var rates: [String?]

    /// Makes a row.
    package init(path: String?, cohortDay: ReportDay, cohortSize: Int, retained: [Int?], rates: [String?]) {
        self.path = path
        self.cohortDay = cohortDay
        self.cohortSize = cohortSize
        self.retained = retained
        self.rates = rates
    }
}

/// Retention cohorts of an app for a range of install days.
package struct RetentionReport: RenderableReport, Equatable {
    package var kind: String { "retention" }
    package var app: String
    package var from: ReportDay
    package var to: ReportDay
    package var watermark: String?
    /// The one link the report was asked for (`--path`, `?path=`), nil for every link.
    package var path: String? = nil
    /// Sorted by path (organic last) then cohort day.
    package var rows: [RetentionRow]

    /// Makes a report.
    package init(app: String, from: ReportDay, to: ReportDay, watermark: String?, rows: [RetentionRow]) {
        self.app = app
        self.from = from
        self.to = to
        self.watermark = watermark
        self.rows = rows
    }
}
