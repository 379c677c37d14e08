/// A small append-only JSON writer over bytes, used for request bodies and the truth file.
///
/// Commas are placed automatically; keys are written in call order, so output is deterministic.
/// Strings are escaped per RFC 8259 (quote, backslash, control characters).
struct JSONBuffer {
    private(set) var bytes: [UInt8] = []
    /// One flag per open container: true once it holds a member.
    private var hasMember: [Bool] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); hasMember.append(false) }
    mutating func endObject() { bytes.append(UInt8(ascii: "}")); hasMember.removeLast() }
    mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); hasMember.append(false) }
    mutating func endArray() { bytes.append(UInt8(ascii: "]")); hasMember.removeLast() }

    /// Writes `"name":`; the next value call writes the member's value.
    mutating func key(_ name: String) {
        separate()
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
        pendingValue = true
    }

    private var pendingValue = false

    mutating func string(_ value: String) { separate(); appendString(value) }
    mutating func int(_ value: some BinaryInteger) { separate(); bytes.append(contentsOf: Array(String(value).utf8)) }
    mutating func null() { separate(); bytes.append(contentsOf: Array("null".utf8)) }
    mutating func bool(_ value: Bool) { separate(); bytes.append(contentsOf: Array((value ? "true" : "false").utf8)) }
    /// A number written exactly as given (e.g. `29.99`, `0.5`); the caller guarantees JSON syntax.
    mutating func number(_ literal: String) { separate(); bytes.append(contentsOf: Array(literal.utf8)) }
    /// Pre-encoded JSON inserted as one value.
    mutating func raw(_ json: [UInt8]) { separate(); bytes.append(contentsOf: json) }

    /// Convenience: `"name":"value"`, `"name":123`, `"name":null` for optionals.
    mutating func field(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }
    mutating func field(_ name: String, _ value: Int) { key(name); int(value) }
    mutating func null(_ name: String) { key(name); null() }
    mutating func field(_ name: String, _ value: Int64) { key(name); int(value) }

    private mutating func separate() {
        if pendingValue {
            pendingValue = false
            return
        }
        guard let last = hasMember.last else { return }
        if last { bytes.append(UInt8(ascii: ",")) } else { hasMember[hasMember.count - 1] = true }
    }

    private mutating func appendString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// Money in minor units as a JSON decimal literal: 2999 → `29.99`, 4900 → `49.00`.
func decimalLiteral(cents: Int64) -> String {
    let sign = cents < 0 ? "-" : ""
    let magnitude = cents.magnitude
    let fraction = magnitude % 100
    return "\(sign)\(magnitude / 100).\(fraction < 10 ? "0" : "")\(fraction)"
}
