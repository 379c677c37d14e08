/// The default funnel of one link: click → install → app_open → sign_up → purchase.
package struct Funnel: Sendable {
    /// The step names, in order.
    package static let steps = ["click", "install", "app_open", "sign_up", "purchase"]
    /// The link path.
    package var link: String
    /// Per cohort day (UTC day index of the click).
    package var cohorts: [Int64: FunnelCohort]
}

/// Step counts and step durations of one funnel cohort.
package struct FunnelCohort: Sendable, Equatable {
    /// Clicks (step 1) and devices (later steps) reaching each step.
    package var counts: [Int] = Array(repeating: 0, count: Funnel.steps.count)
    /// Per step, the milliseconds from the previous step of every device reaching it (step 1: empty).
    package var durations: [[Int64]] = Array(repeating: [], count: Funnel.steps.count)
}
