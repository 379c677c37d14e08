/// A device's install as the pipeline should derive it.
package struct DeviceInstall: Sendable {
    /// Index of the device in `World.devices`.
    package var device: Int32
    /// Time of its first valid event.
    package var install: Int64
    /// Index of the attributed link, nil for organic.
    package var link: Int32?
    /// True when none of the device's events carries an attribution object.
    package var isUnattributable: Bool
}
