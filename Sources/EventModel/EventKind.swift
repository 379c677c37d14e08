/// What an envelope records: an SDK action, a retention event, a link click or a deferred match.
package enum EventKind: String, Sendable, Hashable, CaseIterable {
    /// A user action from `POST /api/analytics/event`.
    case event
    /// A retention event (`app_open`, ...) from `POST /api/analytics/retention`.
    case retention
    /// A link click posted by the link service.
    case click
    /// A deferred install matched to a click, posted by the link service.
    case match
}

/// The platform an event came from; SDK events allow only `ios` and `android`.
package enum Platform: String, Sendable, Hashable, CaseIterable {
    /// Apple platforms.
    case ios
    /// Android.
    case android
    /// A desktop browser (clicks only).
    case desktop
    /// Not known (clicks only).
    case unknown
}

/// How the envelope's `time` was derived from the client's timestamp.
package enum ClockStatus: String, Sendable, Hashable, CaseIterable {
    /// The client's timestamp was used as sent.
    case ok
    /// The device clock was more than 5 minutes off the server's; the time was shifted by the skew.
    case skewCorrected = "skew_corrected"
    /// The time was more than 24 hours ahead of `received_at` and was clamped to it.
    case futureClamped = "future_clamped"
}

/// How the link service opened the link (`kind` of a click).
package enum ClickKind: String, Sendable, Hashable, CaseIterable {
    /// A browser click.
    case web
    /// An in-app verified open.
    case universalLink = "universal_link"
}

/// How a deferred install was matched to a click.
package enum MatchMethod: String, Sendable, Hashable, CaseIterable {
    /// Matched by an identifier.
    case deterministic
    /// Matched by a fingerprint score.
    case probabilistic
}
