#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
    // A batch element's own send time (Segment and RudderStack put one on every message).
    case sentAt, sentAtCamel
    // Stored in `metadata` when sent at the top level (EventNormalizer+TopLevelMetadata.swift).
    case idfv, aaid, idfa, customerUserID, appVersion, buildNumber, consent, osVersion, locale, attStatus, sessionID

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
        case .sentAt: "sent_at"
        case .sentAtCamel: "sentAt"
        case .idfv: "idfv"
        case .aaid: "aaid"
        case .idfa: "idfa"
        case .customerUserID: "customer_user_id"
        case .appVersion: "app_version"
        case .buildNumber: "build_number"
        case .consent: "consent"
        case .osVersion: "os_version"
        case .locale: "locale"
        case .attStatus: "att_status"
        case .sessionID: "session_id"
        }
    }

    /// Client id members, in order of precedence.
    static let idFields: [EventField] = [.eventID, .messageID, .messageIDCamel, .insertID, .uuid]

    /// Members of an SDK event on a single-event route.
    static let sdkMask: UInt64 =
        bits([.eventName, .data, .timestamp, .platform, .deviceID, .attribution, .clickID, .sdk, .metadata])
        | bits(idFields)
        | bits(metadataMembers)

    /// Members of an SDK event in a batch (adds `type` and the element's own `sent_at`).
    static let sdkBatchMask: UInt64 = sdkMask | bits([.type]) | sentAtMask

    /// An element's own send time, either spelling.
    static let sentAtMask: UInt64 = bits([.sentAt, .sentAtCamel])

    /// Members of a link-service click or match.
    static let linkMask: UInt64 =
        bits([.type, .clickID, .url, .timestamp, .platform, .kind, .userAgent, .ip, .referrer, .method, .score])
        | bits(idFields)

    static func bits(_ fields: [EventField]) -> UInt64 {
        fields.reduce(0) { $0 | 1 << UInt64($1.rawValue) }
    }

    /// Keys grouped by length, for matching without building Strings.
    static let byLength: [[EventField]] = {
        var table = [[EventField]](repeating: [], count: 17)
        for field in allCases { table[field.key.utf8CodeUnitCount].append(field) }
        return table
    }()

    /// The field whose key is `bytes`, if any.
    static func named(_ bytes: UnsafeBufferPointer<UInt8>) -> EventField? {
        guard bytes.count < byLength.count else { return nil }
        guard let base = bytes.baseAddress else { return nil }
        // Keys are a few bytes and most candidates differ in the first one: an inline loop beats
        // a call to memcmp.
        let count = bytes.count
        for field in byLength[count] {
            let key = field.key.utf8Start
            var k = 0
            while k < count, key[k] == base[k] { k &+= 1 }
            if k == count { return field }
        }
        return nil
    }
}

/// The values of the known members of one event object, as tape indices (no per-member copies).
/// A copy shares its slots with the original (a reference): one normaliser collects into them.
struct EventFields {
    /// One slot per `EventField`, in one allocation with its header (a `ManagedBuffer`) made once
    /// per normaliser and written in place: an `Array` was allocated and freed through the
    /// runtime's unspecialised paths (~1,000 instructions per request), and slots held inline
    /// made every read of a member copy the whole table (15 copies of 200 bytes per event).
    private let slots: ManagedBuffer<Void, Int32> = {
        let buffer = ManagedBuffer<Void, Int32>.create(minimumCapacity: EventField.allCases.count) { _ in }
        buffer.withUnsafeMutablePointerToElements { $0.initialize(repeating: -1, count: EventField.allCases.count) }
        return buffer
    }()
    private var document: JSONDocument?
    /// The collected members of the last object, one bit each (`EventField.bits`).
    private(set) var found: UInt64 = 0

    subscript(field: EventField) -> JSONValue? {
        let index = slots.withUnsafeMutablePointerToElements { $0[field.rawValue] }
        guard index >= 0, let document else { return nil }
        return JSONValue(document: document, index: Int(index))
    }

    /// Collects the members in `mask` from `object`.
    ///
    /// - Throws: `Rejection` `duplicate_key` when a collected member appears twice.
    mutating func collect(from object: JSONValue, mask: UInt64) throws(Rejection) {
        let document = object.document
        self.document = document
        var found: UInt64 = 0
        defer { self.found = found }
        let duplicate: EventField? = slots.withUnsafeMutablePointerToElements { slots in
            slots.update(repeating: -1, count: EventField.allCases.count)
            return document.tape.withUnsafeBufferPointer { tape in
                document.bytes.withUnsafeBufferPointer { bytes in
                    var k = object.index + 1
                    let end = Int(tape[object.index].next)
                    while k < end {
                        let key = tape[k]
                        let raw = UnsafeBufferPointer(rebasing: bytes[Int(key.start)..<Int(key.end)])
                        let field =
                            key.flags & Token.hasEscapes == 0
                            ? EventField.named(raw)
                            : JSONValue.unescape(raw).withUnsafeBufferPointer { EventField.named($0) }
                        if let field, mask & (1 << UInt64(field.rawValue)) != 0 {
                            if slots[field.rawValue] >= 0 { return field }
                            slots[field.rawValue] = Int32(k + 1)
                            found |= 1 << UInt64(field.rawValue)
                        }
                        k = Int(tape[k + 1].next)
                    }
                    return nil
                }
            }
        }
        if let duplicate {
            throw Rejection(.duplicateKey, "the member \"\(duplicate.key)\" appears more than once")
        }
    }
}
