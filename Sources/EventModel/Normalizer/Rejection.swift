/// Why one event was refused: a stable code (documented in docs/envelope.md) and a message.
struct Rejection: Error {
    /// The stable codes.
    enum Code: String {
        case missingField = "missing_field"
        case invalidType = "invalid_type"
        case invalidTimestamp = "invalid_timestamp"
        case invalidName = "invalid_name"
        case nameTooLong = "name_too_long"
        case eventTooLarge = "event_too_large"
        case invalidPlatform = "invalid_platform"
        case invalidDeviceID = "invalid_device_id"
        case invalidEventID = "invalid_event_id"
        case invalidKind = "invalid_kind"
        case invalidURL = "invalid_url"
        case pathTooLong = "path_too_long"
        case invalidClickID = "invalid_click_id"
        case invalidClickKind = "invalid_click_kind"
        case invalidMethod = "invalid_method"
        case tooDeep = "too_deep"
        case duplicateKey = "duplicate_key"
        case invalidEvent = "invalid_event"
    }

    var code: Code
    var message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
