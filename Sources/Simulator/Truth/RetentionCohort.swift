/// One retention cohort: devices of one link (or organic) installed on one day.
package struct RetentionCohort: Sendable {
    /// The N of the reported days.
    package static let days = [1, 3, 7, 14, 30]
    /// The link path, nil for organic devices.
    package var link: String?
    /// UTC day index of the install.
    package var day: Int64
    /// Devices in the cohort.
    package var size: Int
    /// Per N: devices with an `app_open` on day install + N; nil when that day is after the last simulated day.
    package var retained: [Int?]
}
