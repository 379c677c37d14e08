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
