#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A handle to one value of a `JSONDocument`: cheap to copy, nothing materialised until asked.
package struct JSONValue: Sendable {
    /// The document the value belongs to.
    package let document: JSONDocument
    let index: Int

    var token: Token { document.tape[index] }

    /// The value's JSON type.
    package var kind: JSONKind { JSONKind(rawValue: token.kind)! }

    /// The value's bytes in the document (strings include their quotes).
    package var byteRange: Range<Int> {
        let t = token
        if t.kind == JSONKind.string.rawValue { return Int(t.start) - 1..<Int(t.end) + 1 }
        return Int(t.start)..<Int(t.end)
    }

    /// The value's raw JSON bytes, exactly as in the document.
    package var rawBytes: ArraySlice<UInt8> { document.bytes[byteRange] }

    /// True for `null`.
    package var isNull: Bool { token.kind == JSONKind.null.rawValue }

    /// The Boolean, or nil when the value is not `true`/`false`.
    package var bool: Bool? {
        let t = token
        guard t.kind == JSONKind.bool.rawValue else { return nil }
        return document.bytes[Int(t.start)] == UInt8(ascii: "t")
    }

    /// Levels of containers from this value down to its deepest descendant: 0 for a scalar,
    /// 1 for `{}` or `[1]`, 2 for `{"a":[]}`.
    package var nestingDepth: Int {
        let t = token
        guard t.kind == JSONKind.object.rawValue || t.kind == JSONKind.array.rawValue else { return 0 }
        var deepest = Int(t.depth)
        document.tape.withUnsafeBufferPointer { tape in
            for k in (index + 1)..<Int(t.next) {
                let d = tape[k]
                if d.kind <= JSONKind.array.rawValue && Int(d.depth) > deepest { deepest = Int(d.depth) }
            }
        }
        return deepest - Int(t.depth) + 1
    }
}

// MARK: Containers

extension JSONValue {
    /// The first member named `key` of an object; nil when absent or not an object.
    package subscript(key: String) -> JSONValue? {
        guard token.kind == JSONKind.object.rawValue else { return nil }
        var key = key
        return key.withUTF8 { keyBytes in
            for member in members where member.key.stringEquals(keyBytes) { return member.value }
            return nil
        }
    }

    /// An object's members in document order (empty for other kinds).
    package var members: MemberSequence { MemberSequence(value: self) }

    /// An array's elements in document order (empty for other kinds).
    package var elements: ElementSequence { ElementSequence(value: self) }

    /// The number of members of an object or elements of an array; 0 for scalars.
    package var count: Int {
        let t = token
        guard t.kind == JSONKind.object.rawValue || t.kind == JSONKind.array.rawValue else { return 0 }
        var k = index + 1
        var count = 0
        let end = Int(t.next)
        while k < end {
            k = Int(document.tape[k].next)
            count += 1
        }
        return t.kind == JSONKind.object.rawValue ? count / 2 : count
    }

    /// An object's members as (key, value) handles.
    package struct MemberSequence: Sequence, IteratorProtocol, Sendable {
        let document: JSONDocument
        var position: Int
        let end: Int

        init(value: JSONValue) {
            document = value.document
            let t = value.token
            position = value.index + 1
            end = t.kind == JSONKind.object.rawValue ? Int(t.next) : position
        }

        /// The next member.
        package mutating func next() -> (key: JSONValue, value: JSONValue)? {
            guard position < end else { return nil }
            let key = JSONValue(document: document, index: position)
            let value = JSONValue(document: document, index: position + 1)
            position = Int(document.tape[position + 1].next)
            return (key, value)
        }
    }

    /// An array's elements as handles.
    package struct ElementSequence: Sequence, IteratorProtocol, Sendable {
        let document: JSONDocument
        var position: Int
        let end: Int

        init(value: JSONValue) {
            document = value.document
            let t = value.token
            position = value.index + 1
            end = t.kind == JSONKind.array.rawValue ? Int(t.next) : position
        }

        /// The next element.
        package mutating func next() -> JSONValue? {
            guard position < end else { return nil }
            let element = JSONValue(document: document, index: position)
            position = Int(document.tape[position].next)
            return element
        }
    }
}

// MARK: Strings

extension JSONValue {
    /// The unescaped string, or nil when the value is not a string.
    package var string: String? {
        let t = token
        guard t.kind == JSONKind.string.rawValue else { return nil }
        return document.bytes.withUnsafeBufferPointer { all in
            let raw = UnsafeBufferPointer(rebasing: all[Int(t.start)..<Int(t.end)])
            if t.flags & Token.hasEscapes == 0 { return String(decoding: raw, as: UTF8.self) }
            return String(decoding: JSONValue.unescape(raw), as: UTF8.self)
        }
    }

    /// The unescaped UTF-8 bytes of a string, or nil when the value is not a string.
    package var stringBytes: [UInt8]? {
        let t = token
        guard t.kind == JSONKind.string.rawValue else { return nil }
        return document.bytes.withUnsafeBufferPointer { all in
            let raw = UnsafeBufferPointer(rebasing: all[Int(t.start)..<Int(t.end)])
            if t.flags & Token.hasEscapes == 0 { return Array(raw) }
            return JSONValue.unescape(raw)
        }
    }

    /// Calls `body` with the unescaped UTF-8 bytes of a string without copying them when the
    /// string has no escapes; returns nil when the value is not a string.
    func withStringBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        let t = token
        guard t.kind == JSONKind.string.rawValue else { return nil }
        return document.bytes.withUnsafeBufferPointer { all in
            let raw = UnsafeBufferPointer(rebasing: all[Int(t.start)..<Int(t.end)])
            if t.flags & Token.hasEscapes == 0 { return body(raw) }
            return JSONValue.unescape(raw).withUnsafeBufferPointer(body)
        }
    }

    /// The string's bytes as written between the quotes (escapes not decoded).
    var rawStringBytes: ArraySlice<UInt8> {
        let t = token
        return document.bytes[Int(t.start)..<Int(t.end)]
    }

    /// True when the value is a string with no escapes.
    var isPlainString: Bool {
        let t = token
        return t.kind == JSONKind.string.rawValue && t.flags & Token.hasEscapes == 0
    }

    /// True when the value is a string equal to `other` (UTF-8), comparing bytes when unescaped.
    package func stringEquals(_ other: UnsafeBufferPointer<UInt8>) -> Bool {
        let t = token
        guard t.kind == JSONKind.string.rawValue else { return false }
        return document.bytes.withUnsafeBufferPointer { all in
            let raw = UnsafeBufferPointer(rebasing: all[Int(t.start)..<Int(t.end)])
            if t.flags & Token.hasEscapes == 0 {
                guard raw.count == other.count else { return false }
                return raw.isEmpty || memcmp(raw.baseAddress!, other.baseAddress!, raw.count) == 0
            }
            return JSONValue.unescape(raw).elementsEqual(other)
        }
    }

    /// True when the value is a string equal to `other`.
    package func stringEquals(_ other: StaticString) -> Bool {
        stringEquals(UnsafeBufferPointer(start: other.utf8Start, count: other.utf8CodeUnitCount))
    }

    /// Decodes the escapes of a scanned (hence valid) string body.
    static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        let n = raw.count
        func hex4(_ at: Int) -> UInt32 {
            var v: UInt32 = 0
            for k in at..<(at + 4) { v = v << 4 | UInt32(hexValue(raw[k]) ?? 0) }
            return v
        }
        while i < n {
            let b = raw[i]
            guard b == UInt8(ascii: "\\") else {
                out.append(b)
                i += 1
                continue
            }
            let e = raw[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(i)
                i += 4
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    let low = hex4(i + 2)
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                appendUTF8(scalar, to: &out)
            default: out.append(e)  // " \ /
            }
        }
        return out
    }

    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | scalar >> 6))
            out.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | scalar >> 12))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        default:
            out.append(UInt8(0xF0 | scalar >> 18))
            out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}

// MARK: Numbers

extension JSONValue {
    /// The number as a Double, or nil when the value is not a number or is out of Double's range.
    package var double: Double? {
        let t = token
        guard t.kind == JSONKind.number.rawValue else { return nil }
        if t.flags & Token.isInteger != 0, let small = int64, small.magnitude < (1 << 53) { return Double(small) }
        let text = String(decoding: document.bytes[Int(t.start)..<Int(t.end)], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// The number as an Int64, or nil when it is not an integer literal or does not fit.
    package var int64: Int64? {
        let t = token
        guard t.kind == JSONKind.number.rawValue, t.flags & Token.isInteger != 0 else { return nil }
        var i = Int(t.start)
        let end = Int(t.end)
        let bytes = document.bytes
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        var value: Int64 = 0
        while i < end {
            let d = Int64(bytes[i] &- 48)
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = negative ? m.subtractingReportingOverflow(d) : m.addingReportingOverflow(d)
            if o1 || o2 { return nil }
            value = s
            i += 1
        }
        return value
    }
}
