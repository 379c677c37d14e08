/// A report as the API and `report <kind>` serve it when its tables are written straight from the
/// stored summary lines (`LinkLines`, `FunnelLines`, `AttributionLines`), not from decoded rows:
/// the report's identity and those tables (`ReportService.servedFromLines`).
struct LinesReport: RenderableReport {
    let kind: String
    let app: String
    let from: ReportDay
    let to: ReportDay
    let watermark: String?
    let path: String?
    let tables: [ReportTable]
}
