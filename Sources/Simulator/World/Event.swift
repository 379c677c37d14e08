/// A valid event as the pipeline should record it.
package struct Event: Sendable {
    /// `event` (an action) or `retention`.
    package enum Kind: String, Sendable { case event, retention }
    /// Index of the device.
    package var device: Int32
    /// Action or retention event.
    package var kind: Kind
    /// `event_name`.
    package var name: String
    /// True time (the skew-corrected time for skewed devices).
    package var time: Int64
    /// Attribution sent with the action (newest SDKs only), nil when the event carries none.
    package var attribution: EventAttribution?
    /// The `data` payload.
    package var data: EventData
    /// True when the event is held back and delivered at the very end (days late).
    package var isLate: Bool = false
}

/// The attribution object of an action; indices into `World.clicks`.
package struct EventAttribution: Sendable {
    /// `install_click_id`.
    package var installClick: Int32?
    /// `open_click_id`.
    package var openClick: Int32?
    /// `open_type`: `organic`, `deferred` or `verified`.
    package var openType: String
}

/// The `data` of an event.
package enum EventData: Sendable {
    /// No `data` member.
    case none
    /// Revenue in minor units (cents); `key` is `revenue` or `value`.
    case revenue(cents: Int64, currency: String, key: String)
    /// `{"sku":"..."}`.
    case sku(String)
    /// `{"query":"..."}`.
    case query(String)
    /// `{"url":"<click url>"}` for `opened_via_universal_link`.
    case url(click: Int32)
}
