/// The exact report numbers of a world, as `../shared/docs/reports.md` defines them (docs/simulator.md
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

/// App-wide totals.
package struct Totals: Sendable, Equatable {
    package var clicks = 0
    package var universalLinkOpens = 0
    package var matches = 0
    package var devices = 0
    package var attributedInstalls = 0
    package var organicInstalls = 0
    package var unattributableDevices = 0
    package var actions = 0
    package var retentionEvents = 0
    package var rejectedEvents = 0
}

/// Counts of one (link, day) or one platform slice of it.
package struct DayCounts: Sendable, Equatable {
    package var clicks = 0
    package var universalLinkOpens = 0
    package var matchedInstalls = 0
    package var attributedInstalls = 0
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

/// One row of the per-link daily report.
package struct LinkDay: Sendable {
    package var link: String
    package var day: Int64
    package var total: DayCounts
    /// `ios` and `android` slices (clicks from other platforms only appear in `total`).
    package var byPlatform: [String: DayCounts]
    /// Click-side counts per UTM variant of the link.
    package var byVariant: [LinkVariant: DayCounts]
}

/// The attribution report of one link.
package struct LinkAttribution: Sendable {
    package var link: String
    package var matchedInstalls: Int
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
    package var installs = 0
    package var actions = 0
    package var events: [String: Int] = [:]
    package var revenue: [String: Int64] = [:]
}

/// The default funnel of one link: click → install → app_open → sign_up → purchase.
package struct Funnel: Sendable {
    package static let steps = ["click", "install", "app_open", "sign_up", "purchase"]
    package var link: String
    /// Per cohort day (day of the click).
    package var cohorts: [Int64: FunnelCohort]
}

/// Step counts and median times of one funnel cohort.
package struct FunnelCohort: Sendable, Equatable {
    /// Devices (clicks for step 1) reaching each step.
    package var counts: [Int] = Array(repeating: 0, count: Funnel.steps.count)
    /// Per step, the milliseconds from the previous step of every device reaching it (step 1: empty).
    package var durations: [[Int64]] = Array(repeating: [], count: Funnel.steps.count)
}

/// One retention cohort.
package struct RetentionCohort: Sendable {
    package static let days = [1, 3, 7, 14, 30]
    /// The link path, nil for organic devices.
    package var link: String?
    package var day: Int64
    package var size: Int
    /// Devices with an `app_open` on day N after install, nil when day N is after the last day.
    package var retained: [Int?]
}

/// A device's install as the pipeline should derive it.
package struct DeviceInstall: Sendable {
    package var device: Int32
    package var install: Int64
    /// Attributed link index, nil for organic.
    package var link: Int32?
    /// True when none of the device's events carries an attribution object.
    package var isUnattributable: Bool
}
