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
    /// `user_agent`, when the link service posts it.
    package var userAgent: String?
    /// `ip`, when posted.
    package var ip: String?
    /// `referrer`, when posted.
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
