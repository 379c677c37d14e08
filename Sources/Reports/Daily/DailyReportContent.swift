import Postgres

/// Everything one app's daily report shows, loaded once and rendered in each format.
struct DailyReportContent {
    var app: String
    var date: ReportDay
    var isComplete: Bool
    var requiredWatermark: String
    var watermark: String?
    var links: LinkReport
    var attribution: AttributionReport
    var funnel: FunnelReport
    var retention: RetentionReport

    static func load(
        connection: Connection, app: String, date: ReportDay, isComplete: Bool, requiredWatermark: String
    ) throws(ReportError) -> DailyReportContent {
        let service = ReportService(connection: connection)
        let links = try service.links(app: app, from: date, to: date)
        return DailyReportContent(
            app: app, date: date, isComplete: isComplete, requiredWatermark: requiredWatermark,
            watermark: links.watermark, links: links,
            attribution: try service.attribution(app: app, from: date, to: date),
            funnel: try service.funnel(app: app, from: date, to: date),
            retention: try service.retention(
                app: app, from: date.adding(days: -(DailyReport.retentionDays - 1)), to: date))
    }

    var reports: [any RenderableReport] { [links, attribution, funnel, retention] }

    /// The files of one format: (file name, contents).
    func files(_ format: DailyReportFormat) -> [(String, String)] {
        switch format {
        case .csv:
            // Every row starts with the report date, completeness and watermark, so a CSV read on
            // its own still says whether it is partial.
            return reports.flatMap(\.tables).map { table in
                var stamped = table
                stamped.columns = ["report_date", "complete", "watermark"] + table.columns
                stamped.rows = table.rows.map {
                    [.text(date.iso8601), .text(isComplete ? "true" : "false"), .text(watermark)] + $0
                }
                return (table.name + ".csv", ReportRenderer.csv(stamped))
            }
        case .json:
            var json = "{\"date\":" + ReportJSON.string(date.iso8601) + ",\"app\":" + ReportJSON.string(app)
            json += ",\"complete\":" + (isComplete ? "true" : "false")
            json += ",\"watermark\":" + (watermark.map(ReportJSON.string) ?? "null")
            json += ",\"required_watermark\":" + ReportJSON.string(requiredWatermark)
            json += ",\"reports\":{"
            json += reports.map { ReportJSON.string($0.kind) + ":" + ReportJSON.encode($0) }.joined(separator: ",")
            return [("report.json", json + "}}\n")]
        case .html:
            return [("report.html", DailyReportHTML(content: self).render())]
        }
    }
}
