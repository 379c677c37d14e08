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
}
