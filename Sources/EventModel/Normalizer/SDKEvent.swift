/// An SDK event that passed every check, still pointing into the request body: the envelope or
/// its line is produced from it without intermediate copies.
struct SDKEvent {
    var kind: EventKind
    /// `event_name` (a non-empty string within the length limit).
    var name: JSONValue
    var client: Timestamp
    var platform: Platform
    /// `device_id` (valid; not yet lowercased).
    var device: JSONValue
    /// The client's id (a checked string), absent when the event has none.
    var clientID: JSONValue?
    var attribution: AttributionValues?
    /// `click_id`, absent when missing, `null` or empty.
    var clickID: JSONValue?
    /// `data`, absent when missing or `null`.
    var data: JSONValue?
    /// `metadata`, absent when missing or `null`.
    var metadata: JSONValue?
    /// The stored `metadata` when the event also sent metadata members at the top level: those
    /// members, then `metadata`'s own (EventNormalizer+TopLevelMetadata.swift); nil otherwise.
    var mergedMetadata: [UInt8]? = nil
}

/// `attribution` as checked string values in the body; nil members are null or absent.
struct AttributionValues {
    var installClickID: JSONValue?
    var openClickID: JSONValue?
    var openType: JSONValue?

    /// The strings, for an `Envelope`.
    var strings: Attribution {
        Attribution(
            installClickID: installClickID?.string, openClickID: openClickID?.string, openType: openType?.string)
    }

    /// Bytes the three values take at most once escaped (`null` is within the line's slack).
    var bound: Int {
        6
            * ((installClickID?.byteRange.count ?? 0) + (openClickID?.byteRange.count ?? 0)
                + (openType?.byteRange.count ?? 0))
    }
}
