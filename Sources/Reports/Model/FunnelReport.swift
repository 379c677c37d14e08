/// One step of one funnel cohort (reports.md "Funnels").
package struct FunnelStepRow: Sendable, Equatable {
    /// `default` for the link funnel, else the app's funnel id.
    package var funnelID: String
    /// Display name.
    package var funnelName: String
    /// Link path; nil for organic devices of a funnel that starts with an event.
    package var path: String?
    /// Cohort day (day of step 1).
    package var day: ReportDay
    /// 1-based step number.
    package var step: Int
    /// Step name (`click`, `install`, an event name).
    package var stepName: String
    /// Devices reaching the step (web clicks for a click step 1).
    package var devices: Int
    /// devices / devices of the previous step (exact decimal text), nil for step 1 or a zero previous step.
    package var conversionFromPrevious: String?
    /// devices / devices of step 1.
    package var conversionOverall: String?
    /// Median seconds from the previous step (exact decimal text), nil when no device reached it.
    package var medianSecondsFromPrevious: String?

    /// Makes a row.
    package init(
        funnelID: String, funnelName: String, path: String?, day: ReportDay, step: Int, stepName: String, devices: Int,
        conversionFromPrevious: String?, conversionOverall: String?, medianSecondsFromPrevious: String?
    ) {
        self.funnelID = funnelID
        self.funnelName = funnelName
        self.path = path
        self.day = day
        self.step = step
        self.stepName = stepName
        self.devices = devices
        self.conversionFromPrevious = conversionFromPrevious
        self.conversionOverall = conversionOverall
        self.medianSecondsFromPrevious = medianSecondsFromPrevious
    }
}

/// Funnels of an app for a range of cohort days.
package struct FunnelReport: RenderableReport, Equatable {
    package var kind: String { "funnel" }
    package var app: String
    package var from: ReportDay
    package var to: ReportDay
    package var watermark: String?
    /// The one link the report was asked for (`--path`, `?path=`), nil for every link.
    package var path: String? = nil
    /// Sorted by funnel, path (organic last), day, step.
    package var rows: [FunnelStepRow]

    /// Makes a report.
    package init(app: String, from: ReportDay, to: ReportDay, watermark: String?, rows: [FunnelStepRow]) {
        self.app = app
        self.from = from
        self.to = to
        self.watermark = watermark
        self.rows = rows
    }
}
