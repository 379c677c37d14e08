/// Turns SDK and link-service request bodies into envelopes, event by event.
///
/// Each function validates the body once with the JSON scanner, then normalises every event on its
/// own: a bad event is rejected with a stable code (see `docs/envelope.md`) while the others are
/// accepted. Body-level problems refuse the whole request with a `BodyError`.
package enum Normalizer {
    /// Extra nesting the body may have beyond `IngestLimits.maxDepth` before the whole request is
    /// refused; within it a too-deep event is rejected on its own (`too_deep`).
    package static let bodyDepthAllowance = 64

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
        try runSingle(body: body, kind: kind, context: context, limits: limits, encode: false) { $0.result }
    }

    /// Normalises a single-event body and returns `outcome` of the normaliser. (The normaliser is
    /// not returned itself: the optimised code copied the whole of it on the way out and destroyed
    /// the original, a dozen reference counts per request.)
    static func runSingle<Outcome>(
        body: [UInt8], kind: EventKind, context: RequestContext, limits: IngestLimits, encode: Bool,
        _ outcome: (borrowing EventNormalizer) -> Outcome
    ) throws(BodyError) -> Outcome {
        let document = try parse(body, limits: limits)
        let root = document.root
        guard root.kind == .object else { throw .notAnObject }
        var normalizer = EventNormalizer(document, context: context, limits: limits)
        normalizer.sdkEvent(
            root, index: 0, kind: kind == .retention ? .retention : .event, allowsType: false, encode: encode)
        return outcome(normalizer)
    }

    /// Normalises `{"sent_at": ISO?, "batch": [event, ...]}` from `POST /api/analytics/batch`.
    ///
    /// Each element is an SDK body plus optional `"type": "event" | "retention"` (default `event`)
    /// and an optional client id. Segment's `sentAt` is read when `sent_at` is absent.
    ///
    /// - Throws: `BodyError` when the body is not a JSON object with a non-empty `batch` array
    ///   within `limits.maxBatchEvents`.
    package static func batch(
        body: [UInt8], context: RequestContext, limits: IngestLimits = IngestLimits()
    ) throws(BodyError) -> NormalizedRequest {
        try runBatch(body: body, context: context, limits: limits, encode: false) { $0.result }
    }

    /// Normalises a batch body and returns `outcome` of the normaliser (as `runSingle`).
    static func runBatch<Outcome>(
        body: [UInt8], context: RequestContext, limits: IngestLimits, encode: Bool,
        _ outcome: (borrowing EventNormalizer) -> Outcome
    ) throws(BodyError) -> Outcome {
        let document = try parse(body, limits: limits)
        let root = document.root
        guard root.kind == .object else { throw .notAnObject }
        try refuseRepeated(["batch", "sent_at", "sentAt"], in: root)
        guard let events = root["batch"] else { throw .invalidBatch(message: "the body has no \"batch\" array") }
        guard events.kind == .array else { throw .invalidBatch(message: "\"batch\" must be an array") }
        let count = events.count
        try checkCount(count, limits: limits)
        var normalizer = EventNormalizer(document, context: context, limits: limits)
        if encode {
            // Envelope lines run about 1.45x their events' JSON (ids, times, app, clock), and each
            // line reserves its bound (~1-2 KiB) before it is written.
            normalizer.lines = LineBuffer(capacity: body.count * 8 / 5 + 4096)
        } else {
            normalizer.result.accepted.reserveCapacity(count)
        }
        normalizer.sentAt = normalizer.readSentAt(root)
        for (index, event) in events.elements.enumerated() {
            normalizer.sdkEvent(event, index: index, kind: nil, allowsType: true, encode: encode)
        }
        return outcome(normalizer)
    }

    /// Normalises the link service's `{"clicks":[...],"matches":[...]}` or
    /// `{"batch":[{"type":"click"|"match",...}]}` from `POST /api/link/events`.
    ///
    /// In the first form, rejection indices count clicks first, then matches
    /// (match `k` has index `clicks.count + k`). An optional `sent_at` applies the clock rules.
    ///
    /// - Throws: `BodyError` when the body has no event list, an empty one, or too many events.
    package static func linkEvents(
        body: [UInt8], context: RequestContext, limits: IngestLimits = IngestLimits()
    ) throws(BodyError) -> NormalizedRequest {
        let document = try parse(body, limits: limits)
        let root = document.root
        guard root.kind == .object else { throw .notAnObject }
        try refuseRepeated(["batch", "clicks", "matches", "sent_at", "sentAt"], in: root)
        var normalizer = EventNormalizer(document, context: context, limits: limits)
        normalizer.sentAt = normalizer.readSentAt(root)
        if let events = root["batch"], !events.isNull {  // null is absent, as beside it
            guard events.kind == .array else { throw .invalidBatch(message: "\"batch\" must be an array") }
            // Reading one form and ignoring the other would drop events without a trace (null or
            // an empty list beside `batch` drops nothing).
            for name in ["clicks", "matches"] {
                guard let list = root[name], !list.isNull, list.kind != .array || list.count > 0 else { continue }
                throw .invalidBatch(message: "send either \"batch\" or \"clicks\"/\"matches\", not both")
            }
            let count = events.count
            try checkCount(count, limits: limits)
            normalizer.result.accepted.reserveCapacity(count)
            for (index, event) in events.elements.enumerated() {
                normalizer.linkEvent(event, index: index, kind: nil)
            }
            return normalizer.result
        }
        let clicks = root["clicks"]
        let matches = root["matches"]
        guard clicks != nil || matches != nil else {
            throw .invalidBatch(message: "the body has no \"clicks\", \"matches\" or \"batch\" array")
        }
        for (name, list) in [("clicks", clicks), ("matches", matches)] {
            if let list, list.kind != .array, !list.isNull {
                throw .invalidBatch(message: "\"\(name)\" must be an array")
            }
        }
        let clickCount = clicks?.count ?? 0
        let count = clickCount + (matches?.count ?? 0)
        try checkCount(count, limits: limits)
        normalizer.result.accepted.reserveCapacity(count)
        if let clicks {
            for (index, event) in clicks.elements.enumerated() {
                normalizer.linkEvent(event, index: index, kind: .click)
            }
        }
        if let matches {
            for (offset, event) in matches.elements.enumerated() {
                normalizer.linkEvent(event, index: clickCount + offset, kind: .match)
            }
        }
        return normalizer.result
    }

    /// Refuses a body whose root object repeats a member the route reads (`invalid_batch`). JSON
    /// allows it, and reading the first would drop the other's events without a trace: until
    /// 2026-12-04 `{"batch":[A],"batch":[B]}` was answered `{"accepted":1}` and B was in neither
    /// the log nor the dead letters. (Within an event a repeated member is `duplicate_key`.)
    static func refuseRepeated(_ names: [StaticString], in root: JSONValue) throws(BodyError) {
        var seen = [Bool](repeating: false, count: names.count)
        for member in root.members {
            for (slot, name) in names.enumerated() where member.key.stringEquals(name) {
                if seen[slot] {
                    throw .invalidBatch(message: "the member \"\(name)\" appears more than once in the body")
                }
                seen[slot] = true
            }
        }
    }

    static func parse(_ body: [UInt8], limits: IngestLimits) throws(BodyError) -> JSONDocument {
        let depthLimit = limits.maxDepth + bodyDepthAllowance
        do throws(JSONError) {
            return try JSONDocument(parsing: body, maxDepth: depthLimit, maxValues: limits.maxValues)
        } catch {
            if error.reason == .tooDeep { throw .tooDeep(limit: depthLimit) }
            if error.reason == .tooManyValues { throw .tooManyValues(limit: limits.maxValues) }
            throw .invalidJSON(message: error.reason.rawValue, byteOffset: error.byteOffset)
        }
    }

    static func checkCount(_ count: Int, limits: IngestLimits) throws(BodyError) {
        guard count > 0 else { throw .emptyBatch }
        guard count <= limits.maxBatchEvents else { throw .tooManyEvents(count: count, limit: limits.maxBatchEvents) }
    }
}
