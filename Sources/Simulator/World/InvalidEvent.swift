/// An event the pipeline must refuse.
package struct InvalidEvent: Sendable {
    /// What is wrong with it.
    package enum Defect: String, Sendable, CaseIterable {
        case missingEventName = "missing_event_name"
        case badTimestamp = "bad_timestamp"
        case badPlatform = "bad_platform"
        case missingDeviceID = "missing_device_id"
    }
    /// Index of the device it pretends to come from.
    package var device: Int32
    /// The defect.
    package var defect: Defect
    /// The time it claims (before the device's install, so accepting it by mistake moves the install).
    package var time: Int64
    /// True when it travels inside a batch (answered 2xx with a per-event rejection), false when
    /// sent alone (answered 400).
    package var inBatch: Bool

    /// The rejection code the pipeline is expected to answer with.
    package var expectedCode: String {
        switch defect {
        case .missingEventName, .missingDeviceID: "missing_field"
        case .badTimestamp: "invalid_timestamp"
        case .badPlatform: "invalid_platform"
        }
    }
}
