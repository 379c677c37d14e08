/// A complete simulated world: what really happened, before any of it is sent.
///
/// The request plan decides how each fact reaches the pipeline (SDK family, batch or single,
/// gzip, duplicates, order); the truth is computed from these facts alone. Indices (`Int32`)
/// point into the arrays of this value. Event times are true times, whole seconds, in
/// milliseconds since the epoch (see `SimulatedTime`).
package struct World: Sendable {
    /// What the world was generated from.
    package var parameters: WorldParameters
    /// The app hash in link URLs (`https://acme.godetour.link/<hash>/<path>`).
    package var appHash: String
    /// The app's links.
    package var links: [Link]
    /// Every click the link service records, web and universal link, in time order.
    package var clicks: [Click]
    /// Every deferred-install match the link service posts, in time order.
    package var matches: [Match]
    /// Every device that sends at least one valid event.
    package var devices: [Device]
    /// Every valid event (actions and retention events), grouped by device, in time order per device.
    package var events: [Event]
    /// Events that the pipeline must refuse, each with the expected rejection code.
    package var invalidEvents: [InvalidEvent]

    /// The end of the simulated period (exclusive): the truth's "as of" time.
    package var end: Int64 { parameters.start + Int64(parameters.days) * SimulatedTime.day }

    /// The full link URL of a click, e.g. `https://acme.godetour.link/AbCdEf1234/articles/2?utm_source=news`.
    package func url(of click: Click) -> String {
        let link = links[Int(click.link)]
        let query = link.variants[Int(click.variant)].query
        return "https://acme.godetour.link/\(appHash)\(link.path)" + (query.isEmpty ? "" : "?" + query)
    }
}

/// A link: a path after the app hash, with the UTM variants it is shared under.
package struct Link: Sendable {
    /// The path, e.g. `/articles/2`.
    package var path: String
    /// The query-string variants clicks arrive with (the breakdown dimensions).
    package var variants: [LinkVariant]
}

/// One set of UTM parameters a link is shared with.
package struct LinkVariant: Sendable, Hashable {
    /// `utm_source`, nil when absent.
    package var source: String?
    /// `utm_medium`, nil when absent.
    package var medium: String?
    /// `utm_campaign`, nil when absent.
    package var campaign: String?

    /// The query string in URL order, without `?` (empty when no parameter is set).
    package var query: String {
        [("utm_source", source), ("utm_medium", medium), ("utm_campaign", campaign)]
            .compactMap { name, value in value.map { "\(name)=\($0)" } }
            .joined(separator: "&")
    }
}

/// A click recorded by the link service.
package struct Click: Sendable {
    /// `web` (a browser click) or `universal_link` (an in-app verified open).
    package enum Kind: String, Sendable { case web, universalLink = "universal_link" }
    /// `click_id`, e.g. `clk_000123_4f2a`.
    package var id: String
    /// Index of the link.
    package var link: Int32
    /// Index of the link's variant (its UTM parameters).
    package var variant: Int32
    /// Click time.
    package var time: Int64
    /// Web or universal link.
    package var kind: Kind
    /// `ios`, `android`, `desktop` or `unknown`.
    package var platform: String
    /// Optional extras the link service may post.
    package var userAgent: String?
    package var ip: String?
    package var referrer: String?
}

/// A deferred install matched to a click by the link service.
package struct Match: Sendable {
    /// Index of the matched click.
    package var click: Int32
    /// Match time (just after the device's install).
    package var time: Int64
    /// `deterministic` or `probabilistic`.
    package var method: String
    /// The probabilistic score (>= 850), nil for deterministic matches.
    package var score: Int?
}

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
