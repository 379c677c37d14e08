/// The clock rules: how an event's time follows from the client's timestamp.
///
/// - With a batch `sent_at`, the device clock's skew is `received_at - sent_at`. When it exceeds
///   5 minutes either way, event time = `received_at - (sent_at - client timestamp)`; smaller
///   skews are network delay and the client's time is kept, so funnels are not reordered.
/// - An event time more than 24 hours ahead of `received_at` is clamped to `received_at`.
/// - Nothing is dropped for its time alone.
package enum ClockRule {
    /// Skews up to this are left alone: 5 minutes.
    package static let skewThreshold: Int64 = 5 * 60 * 1_000_000
    /// Times further ahead of arrival than this are clamped: 24 hours.
    package static let futureLimit: Int64 = 24 * 3600 * 1_000_000

    /// The corrected time of an event and how it was derived.
    ///
    /// - Parameters:
    ///   - client: the event's own timestamp.
    ///   - sentAt: the batch's `sent_at` (device clock), if any.
    ///   - receivedAt: server time at arrival.
    package static func resolve(client: Timestamp, sentAt: Timestamp?, receivedAt: Timestamp) -> (
        time: Timestamp, clock: ClockStatus
    ) {
        var time = client
        var clock = ClockStatus.ok
        if let sentAt {
            let skew = receivedAt.microseconds - sentAt.microseconds
            if skew.magnitude > UInt64(skewThreshold) {
                time = Timestamp(microseconds: receivedAt.microseconds - (sentAt.microseconds - client.microseconds))
                clock = .skewCorrected
            }
        }
        if time.microseconds - receivedAt.microseconds > futureLimit {
            time = receivedAt
            clock = .futureClamped
        }
        return (time, clock)
    }
}
