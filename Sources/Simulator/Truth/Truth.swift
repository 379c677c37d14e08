/// The exact report numbers of a world, as docs/report-definitions.md defines them (docs/simulator.md
/// states every field and assumption). Computed by `TruthCalculator` from the world alone.
package struct Truth: Sendable {
    /// The app the numbers belong to.
    package var appID: String
    /// First simulated day (index of the UTC day since 1970-01-01).
    package var firstDay: Int64
    /// Last simulated day (inclusive).
    package var lastDay: Int64
    /// The "as of" time: the end of the simulated period (exclusive), milliseconds.
    package var asOf: Int64
    /// App-wide totals.
    package var totals: Totals
    /// Per-link daily rows, sorted by link path then day; a row exists when any count is non-zero.
    package var linkDays: [LinkDay]
    /// Per-link attribution report.
    package var attribution: [LinkAttribution]
    /// Organic installs per install day.
    package var organicByDay: [Int64: Int]
    /// Unattributable devices per install day.
    package var unattributableByDay: [Int64: Int]
    /// The default per-link funnel.
    package var funnels: [Funnel]
    /// Retention cohorts, per link then organic (`link == nil`), by install day.
    package var retention: [RetentionCohort]
    /// Every device: its install and attribution.
    package var devices: [DeviceInstall]
    /// Events the pipeline must refuse.
    package var rejected: [InvalidEvent]
    /// Device ids by index (for `devices` and `rejected`).
    package var deviceIDs: [String]
    /// Link paths by index (for `devices`).
    package var linkPaths: [String]
}
