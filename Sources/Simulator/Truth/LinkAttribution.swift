/// The attribution report of one link.
package struct LinkAttribution: Sendable {
    /// The link path.
    package var link: String
    /// Matches whose click is on the link, over the period.
    package var matchedInstalls: Int
    /// Devices attributed to the link, over the period.
    package var attributedInstalls: Int
    /// Cohort view: attributed devices by install day; their actions and revenue over the whole period.
    package var byInstallDay: [Int64: CohortValue]
    /// Activity view: actions and revenue of attributed devices by event day.
    package var byEventDay: [Int64: CohortValue]
    /// Actions (of any device) whose `open_click_id` is a click on the link, by event day.
    package var lastTouchOpens: [Int64: Int]
}

/// Installs, actions and revenue of a group of attributed devices.
package struct CohortValue: Sendable, Equatable {
    /// Devices installed (cohort view only).
    package var installs = 0
    /// Actions.
    package var actions = 0
    /// Actions by event name.
    package var events: [String: Int] = [:]
    /// Purchase minus refund revenue in minor units, per currency.
    package var revenue: [String: Int64] = [:]
}
