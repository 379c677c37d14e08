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
    var clientID: String?
    var attribution: Attribution?
    var clickID: String?
    /// `data`, absent when missing or `null`.
    var data: JSONValue?
    /// `metadata`, absent when missing or `null`.
    var metadata: JSONValue?
}
