// The top-level members of one event object, found in one pass over its keys.
//
// Keys are matched as bytes (no String per key); a key written with escapes is unescaped first.
// A known member that appears twice makes the event ambiguous and it is rejected with
// `duplicate_key`; unknown members are ignored (SDKs add fields over time).

/// A top-level member the normaliser reads.
enum EventField: Int, CaseIterable {
    case eventName, data, timestamp, platform, deviceID, attribution, clickID, sdk, metadata
    case type, eventID, messageID, messageIDCamel, insertID, uuid
    case url, kind, userAgent, ip, referrer, method, score

    /// The member's key.
    var key: StaticString {
        switch self {
        case .eventName: "event_name"
        case .data: "data"
        case .timestamp: "timestamp"
        case .platform: "platform"
        case .deviceID: "device_id"
        case .attribution: "attribution"
        case .clickID: "click_id"
        case .sdk: "sdk"
        case .metadata: "metadata"
        case .type: "type"
        case .eventID: "event_id"
        case .messageID: "message_id"
        case .messageIDCamel: "messageId"
        case .insertID: "insert_id"
        case .uuid: "uuid"
        case .url: "url"
        case .kind: "kind"
        case .userAgent: "user_agent"
        case .ip: "ip"
        case .referrer: "referrer"
        case .method: "method"
        case .score: "score"
        }
    }

    /// Client id members, in order of precedence.
    static let idFields: [EventField] = [.eventID, .messageID, .messageIDCamel, .insertID, .uuid]

    /// Members of an SDK event (`allowsType`: also `type`, in batches).
    static func sdkMask(allowsType: Bool) -> UInt32 {
        var mask = bits([.eventName, .data, .timestamp, .platform, .deviceID, .attribution, .clickID, .sdk, .metadata])
        mask |= bits(idFields)
        if allowsType { mask |= bits([.type]) }
        return mask
    }

    /// Members of a link-service click or match.
    static let linkMask: UInt32 = bits([.type, .clickID, .url, .timestamp, .platform, .kind, .userAgent, .ip, .referrer, .method, .score])
        | bits(idFields)

    static func bits(_ fields: [EventField]) -> UInt32 {
        fields.reduce(0) { $0 | 1 << UInt32($1.rawValue) }
    }

    /// Keys grouped by length, for matching without building Strings.
    static let byLength: [[EventField]] = {
        var table = [[EventField]](repeating: [], count: 16)
        for field in allCases { table[field.key.utf8CodeUnitCount].append(field) }
        return table
    }()

    /// The field whose key is `bytes`, if any.
    static func named(_ bytes: UnsafeBufferPointer<UInt8>) -> EventField? {
        guard bytes.count < byLength.count else { return nil }
        for field in byLength[bytes.count] {
            let key = field.key
            if memcmpEqual(key.utf8Start, bytes.baseAddress!, bytes.count) { return field }
        }
        return nil
    }

    private static func memcmpEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        for k in 0..<count where a[k] != b[k] { return false }
        return true
    }
}

/// The values of the known members of one event object.
struct EventFields {
    private var slots: [JSONValue?] = Array(repeating: nil, count: EventField.allCases.count)

    subscript(field: EventField) -> JSONValue? { slots[field.rawValue] }

    /// Collects the members in `mask` from `object`.
    ///
    /// - Throws: `Rejection` `duplicate_key` when a collected member appears twice.
    mutating func collect(from object: JSONValue, mask: UInt32) throws(Rejection) {
        for k in slots.indices { slots[k] = nil }
        for (key, value) in object.members {
            let field: EventField?
            if key.isPlainString {
                field = key.document.bytes.withUnsafeBufferPointer { all in
                    let range = key.byteRange
                    return EventField.named(UnsafeBufferPointer(rebasing: all[(range.lowerBound + 1)..<(range.upperBound - 1)]))
                }
            } else {
                field = (key.stringBytes ?? []).withUnsafeBufferPointer { EventField.named($0) }
            }
            guard let field, mask & (1 << UInt32(field.rawValue)) != 0 else { continue }
            guard slots[field.rawValue] == nil else {
                throw Rejection(.duplicateKey, "the member \"\(field.key)\" appears more than once")
            }
            slots[field.rawValue] = value
        }
    }
}
