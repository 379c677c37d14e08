/// Builds JSON text byte by byte, without Foundation's encoders: ingest's answers and dead letters,
/// and the reports' JSON (a 30-day per-link report at 1,000 links is ~54 MB of it).
package struct JSONText: Sendable {
    package fileprivate(set) var bytes: [UInt8] = []

    package init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    /// How many bytes are written.
    package var count: Int { bytes.count }

    /// Forgets the bytes written, keeping the buffer (a streamed report reuses one per piece).
    package mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Writes into `buffer`'s storage, emptied first (a buffer handed back for reuse).
    package init(reusing buffer: [UInt8]) {
        bytes = buffer
        bytes.removeAll(keepingCapacity: true)
    }

    /// The bytes written, moved out (no copy); the text is empty afterwards.
    package mutating func takeBytes() -> [UInt8] {
        let taken = bytes
        bytes = []
        return taken
    }

    /// Makes room for `count` more bytes (an estimate saves the buffer's regrowth copies).
    package mutating func reserve(_ count: Int) { bytes.reserveCapacity(bytes.count + count) }

    /// Writes an ASCII literal such as `,"key":` as it is.
    package mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Writes a decimal integer.
    package mutating func int(_ value: Int) {
        if value >= 0 && value < 10 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(value))
            return
        }
        // Digits backwards into a small buffer (Int.min has 20 of them), then copied in order.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var index = 20
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") &+ UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index...]))
        }
    }

    /// Writes `text` as a quoted JSON string (RFC 8259), escaping quotes, backslashes and control
    /// characters; text with none of them (names, paths, ids: nearly always) is copied at once.
    package mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                bytes.append(contentsOf: utf8)
                return true
            }
            return false
        }
        if copied != true { escaped(text.utf8) }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escaped(_ utf8: String.UTF8View) {
        let hex: StaticString = "0123456789abcdef"
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                hex.withUTF8Buffer { digits in
                    bytes.append(digits[Int(byte >> 4)])
                    bytes.append(digits[Int(byte & 0xF)])
                }
            default: bytes.append(byte)
            }
        }
    }

    /// Writes already-valid JSON bytes as they are (not generic: called per value of a large report,
    /// where a generic form was a third of the time, unspecialised across the module boundary).
    package mutating func json(_ raw: [UInt8]) { bytes.append(contentsOf: raw) }

    /// Writes already-valid JSON text (a number as PostgreSQL printed it) as it is.
    package mutating func json(text: String) {
        if text.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: Array(text.utf8))
        }
    }
}

/// Object keys encoded once (`"name":` each), for writing the same keys many times: a report's
/// column names, and the event names every row of a per-link report repeats.
package final class JSONKeys: Sendable {
    /// Every key's `"name":`, one after another.
    private let bytes: [UInt8]
    /// Where each key ends in `bytes`.
    private let ends: [Int]

    /// The keys of `names`, in order.
    package init(_ names: [String]) {
        var text = JSONText(capacity: names.reduce(0) { $0 + $1.utf8.count + 3 })
        var ends: [Int] = []
        ends.reserveCapacity(names.count)
        for name in names {
            text.string(name)
            text.raw(":")
            ends.append(text.count)
        }
        bytes = text.bytes
        self.ends = ends
    }

    /// How many keys.
    package var count: Int { ends.count }

    /// No keys.
    package static let none = JSONKeys([])

    /// Appends key `index`'s bytes to `out`.
    fileprivate func write(_ index: Int, into out: inout JSONText) {
        let start = index == 0 ? 0 : ends[index - 1]
        bytes.withUnsafeBufferPointer { keys in
            out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: keys[start..<ends[index]]))
        }
    }
}

extension JSONText {
    /// Writes key `index` of `keys` (`"name":`).
    package mutating func key(_ keys: JSONKeys, _ index: Int) { keys.write(index, into: &self) }
}
