/// How the world reaches the pipeline: which facts go in which request, in which order.
///
/// Three phases, each sent to completion before the next: (0) the link service posts clicks then
/// matches (a few matches first, before their clicks); (1) SDK traffic in time order (single
/// events, per-day batches, skewed devices' single batch, a few invalid events, adjacent duplicate
/// requests); (2) late arrivals: held-back clicks and sessions delivered days after their time.
/// Requests are encoded only when sent (`RequestEncoder`), so memory stays proportional to the world.
package struct RequestPlan: Sendable {
    /// One planned request.
    struct Item: Sendable {
        enum Content: Sendable {
            /// A link-service post; `batchForm` uses `{"batch":[{"type":...}]}` instead of clicks/matches.
            case link(clicks: [Int32], matches: [Int32], batchForm: Bool)
            /// One valid event on its single-event route.
            case single(event: Int32)
            /// `POST /api/analytics/batch` of one device's events, with invalid events inside;
            /// `hasSentAt` adds `sent_at` read from the device clock when the request is encoded.
            case batch(device: Int32, events: [Int32], invalid: [Int32], hasSentAt: Bool)
            /// One invalid event alone on its route.
            case invalidSingle(Int32)
            /// A body that is not JSON at all.
            case malformed(device: Int32)
        }
        var content: Content
        var gzip: Bool
        /// Android device ids sent uppercase in this request.
        var uppercaseDevice: Bool
    }

    /// The phases, in sending order.
    var phases: [[Item]]

    /// Number of requests.
    package var count: Int { phases.reduce(0) { $0 + $1.count } }
}
