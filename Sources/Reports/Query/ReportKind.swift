/// The interactive reports (CLI `report <kind>`, API `/api/reports/<kind>`).
package enum ReportKind: String, Sendable, CaseIterable {
    /// Per link and day.
    case links
    /// Funnels per cohort day.
    case funnel
    /// Retention cohorts.
    case retention
    /// Attribution per link and day, installs per day.
    case attribution

    /// The report's tables (JSON's `tables`), the main one first: what `table=` may name.
    package var tableNames: [String] {
        switch self {
        case .links: ["links", "utm"]
        case .funnel: ["funnel"]
        case .retention: ["retention"]
        case .attribution: ["attribution", "installs"]
        }
    }
}
