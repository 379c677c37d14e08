/// Turns SDK and link-service request bodies into envelopes, event by event.
///
/// Each function validates the body once with the JSON scanner, then normalises every event on its
/// own: a bad event is rejected with a stable code (see `docs/envelope.md`) while the others are
/// accepted. Body-level problems refuse the whole request with a `BodyError`.
package enum Normalizer {
    /// Normalises one SDK event from `POST /api/analytics/event` or `/retention`.
    ///
    /// - Parameters:
    ///   - body: the decompressed request body.
    ///   - kind: `.event` or `.retention`.
    ///   - context: app, `X-SDK` header and arrival time.
    ///   - limits: size, depth and name limits.
    /// - Throws: `BodyError` when the body is not a JSON object.
    package static func single(
        body: [UInt8], kind: EventKind, context: RequestContext, limits: IngestLimits = IngestLimits()
    ) throws(BodyError) -> NormalizedRequest {
        fatalError("not yet implemented")
    }

    /// Normalises `{"sent_at": ISO?, "batch": [event, ...]}` from `POST /api/analytics/batch`.
    ///
    /// - Throws: `BodyError` when the body is not a JSON object with a non-empty `batch` array
    ///   within `limits.maxBatchEvents`.
    package static func batch(
        body: [UInt8], context: RequestContext, limits: IngestLimits = IngestLimits()
    ) throws(BodyError) -> NormalizedRequest {
        fatalError("not yet implemented")
    }

    /// Normalises the link service's `{"clicks":[...],"matches":[...]}` or
    /// `{"batch":[{"type":"click"|"match",...}]}` from `POST /api/link/events`.
    ///
    /// - Throws: `BodyError` when the body has no event list or too many events.
    package static func linkEvents(
        body: [UInt8], context: RequestContext, limits: IngestLimits = IngestLimits()
    ) throws(BodyError) -> NormalizedRequest {
        fatalError("not yet implemented")
    }
}
