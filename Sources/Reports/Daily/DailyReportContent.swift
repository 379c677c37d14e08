import JSONText
import Postgres

/// Everything one app's daily report shows, loaded once and rendered in each format.
struct DailyReportContent {
    var app: String
    var date: ReportDay
    var isComplete: Bool
    var requiredWatermark: String
    var watermark: String?
    /// `report_watermark.loaded_through` in the same snapshot: which retention days are over.
    var loadedThrough: String?
    var links: LinkReport
    var attribution: AttributionReport
    var funnel: FunnelReport
    var retention: RetentionReport

    /// Reads everything in one snapshot (a read-only repeatable-read transaction), so the sections
    /// and the stated watermark and `loaded_through` agree however the loads go on meanwhile.
    static func load(
        connection: Connection, app: String, date: ReportDay, isComplete: Bool, requiredWatermark: String
    ) throws(ReportError) -> DailyReportContent {
        let service = ReportService(connection: connection)
        return try service.inSnapshot { () throws(ReportError) in
            try service.run {
                let links = try service.links(app: app, from: date, to: date)
                return DailyReportContent(
                    app: app, date: date, isComplete: isComplete, requiredWatermark: requiredWatermark,
                    watermark: links.watermark,
                    loadedThrough: try connection.query(ReportSQL.loadedThrough).first?[
                        "loaded_through", as: String?.self] ?? nil,
                    links: links,
                    attribution: try service.attribution(app: app, from: date, to: date),
                    funnel: try service.funnel(app: app, from: date, to: date),
                    // The 31 cohorts stop at 0001-01-01: a day of year 0 is out of PostgreSQL's date range.
                    retention: try service.retention(
                        app: app, from: max(date.adding(days: -(DailyReport.retentionDays - 1)), ReportDay.first),
                        to: date))
            }
        }
    }

    var reports: [any RenderableReport] { [links, attribution, funnel, retention] }

    /// The files of one format: (file name, contents).
    func files(_ format: DailyReportFormat) -> [(String, String)] {
        switch format {
        case .csv:
            // Every row starts with the report date, completeness and watermark, so a CSV read on
            // its own still says whether it is partial.
            let stamp: [ReportValue] = [.text(date.iso8601), .text(isComplete ? "true" : "false"), .text(watermark)]
            return reports.flatMap(\.tables).map { table in
                let stamped = table.prefixed(columns: ["report_date", "complete", "watermark"], values: stamp)
                return (table.name + ".csv", ReportRenderer.csv(stamped))
            }
        case .json:
            var json = JSONText()
            json.raw("{\"date\":")
            json.string(date.iso8601)
            json.raw(",\"app\":")
            json.string(app)
            json.raw(isComplete ? ",\"complete\":true" : ",\"complete\":false")
            json.raw(",\"watermark\":")
            if let watermark { json.string(watermark) } else { json.raw("null") }
            json.raw(",\"loaded_through\":")
            if let loadedThrough { json.string(loadedThrough) } else { json.raw("null") }
            json.raw(",\"required_watermark\":")
            json.string(requiredWatermark)
            json.raw(",\"reports\":{")
            for (index, report) in reports.enumerated() {
                if index > 0 { json.raw(",") }
                json.string(report.kind)
                json.raw(":")
                ReportJSON.write(report, into: &json)
            }
            json.raw("}}\n")
            return [("report.json", String(decoding: json.takeBytes(), as: UTF8.self))]
        case .html:
            return [("report.html", DailyReportHTML(content: self).render())]
        }
    }
}
