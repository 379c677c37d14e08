/// The SDK generation a device runs; it decides the headers and whether actions carry attribution.
package enum SDKFamily: String, Sendable, CaseIterable {
    /// `X-SDK: ios/1.0.2` etc.; no attribution.
    case current
    /// `X-SDK` with a newer version; attribution on every action (`install_click_id` included).
    case newest
    /// No `X-SDK` header; sometimes an `sdk` body field; no attribution.
    case legacy
}

/// A device (an SDK install).
package struct Device: Sendable {
    /// `device_id`, a lowercase UUID (Android requests sometimes send it uppercase).
    package var id: String
    /// `ios` or `android`.
    package var platform: String
    /// The SDK family.
    package var sdk: SDKFamily
    /// `X-SDK` header value (nil for legacy SDKs).
    package var sdkHeader: String?
    /// How far the device clock is ahead of true time, in milliseconds (0 for a correct clock).
    /// Skewed devices send everything in one batch whose `sent_at` is read from the same clock.
    package var clockSkew: Int64
    /// Index of the click that brought the install (matched installs), nil for organic devices.
    package var installClick: Int32?
    /// True when the device sends its events in batches rather than one request per event.
    package var usesBatches: Bool
}
