/// One row of the per-link daily report.
package struct LinkDay: Sendable {
    /// The link path.
    package var link: String
    /// UTC day index (days since 1970-01-01).
    package var day: Int64
    /// The row's counts.
    package var total: DayCounts
    /// `ios` and `android` slices (clicks from other platforms only appear in `total`).
    package var byPlatform: [String: DayCounts]
    /// Click-side counts per UTM variant of the link (only click, open and install columns are used).
    package var byVariant: [LinkVariant: DayCounts]
}

/// Counts of one (link, day) or one slice of it; docs/simulator.md defines each column.
package struct DayCounts: Sendable, Equatable {
    /// Web clicks that day.
    package var clicks = 0
    /// `universal_link` clicks that day.
    package var universalLinkOpens = 0
    /// Matches that day whose click is on the link.
    package var matchedInstalls = 0
    /// Devices attributed to the link installed that day.
    package var attributedInstalls = 0
    /// Devices re-engaged through the link that day.
    package var reengagements = 0
    /// Actions by event name (attributed devices).
    package var events: [String: Int] = [:]
    /// Retention events by name (attributed devices).
    package var retentionEvents: [String: Int] = [:]
    /// Purchase minus refund revenue in minor units, per currency (attributed devices).
    package var revenue: [String: Int64] = [:]

    /// True when every count is zero.
    package var isEmpty: Bool {
        clicks == 0 && universalLinkOpens == 0 && matchedInstalls == 0 && attributedInstalls == 0
            && reengagements == 0 && events.isEmpty && retentionEvents.isEmpty && revenue.isEmpty
    }
}
