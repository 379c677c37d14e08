/// App-wide totals of a world (the truth file's `totals`).
package struct Totals: Sendable, Equatable {
    /// Web clicks.
    package var clicks = 0
    /// `universal_link` clicks.
    package var universalLinkOpens = 0
    /// Matches posted by the link service.
    package var matches = 0
    /// Devices with at least one valid event.
    package var devices = 0
    /// Devices attributed to a link.
    package var attributedInstalls = 0
    /// Devices not attributed (unattributable ones included).
    package var organicInstalls = 0
    /// Devices none of whose events carries an attribution object.
    package var unattributableDevices = 0
    /// Valid events of kind `event`.
    package var actions = 0
    /// Valid events of kind `retention`.
    package var retentionEvents = 0
    /// Invalid events (each must be refused).
    package var rejectedEvents = 0
}
