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
