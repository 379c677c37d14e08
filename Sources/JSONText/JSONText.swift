/// Builds JSON text byte by byte, without Foundation's encoders: ingest's answers and dead letters,
/// and the reports' JSON (a 30-day per-link report at 1,000 links is ~54 MB of it, ~11M small
/// writes: a key, a comma, a count).
///
/// The bytes live in an array whose elements past `count` are spare room (zeros or old bytes), so a
/// write is a capacity check and a copy into place (`Array.append(contentsOf:)`, through its generic
/// path, was a seventh of the per-link report's time). The writers are `@inlinable` and `public`:
/// with `package` access, Swift 6.3 compiled every call from the reports and ingest as a call (seen
/// in the release binary's `ReportRowWriter.int`), and the same buffer measured no faster.
public struct JSONText: Sendable {
    /// The written bytes, then spare room: `storage[..<count]` is the text.
    @usableFromInline var storage: [UInt8]
    /// How many bytes are written.
    @usableFromInline var written = 0

    /// An empty text with room reserved for `capacity` bytes (reserved, not yet touched).
    public init(capacity: Int = 64) {
        storage = []
        storage.reserveCapacity(capacity)
    }

    /// The bytes written (a copy unless the text fills its buffer exactly).
    public var bytes: [UInt8] {
        written == storage.count ? storage : Array(storage[..<written])
    }

    /// How many bytes are written.
    @inlinable public var count: Int { written }

    /// Forgets the bytes written, keeping the buffer (a streamed report reuses one per piece).
    public mutating func removeAll() { written = 0 }

    /// Writes into `buffer`'s storage, emptied first (a buffer handed back for reuse).
    public init(reusing buffer: [UInt8]) { storage = buffer }

    /// The bytes written, moved out (no copy: the buffer is cut to them); the text is empty afterwards.
    public mutating func takeBytes() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &storage)
        taken.removeLast(taken.count - written)
        written = 0
        return taken
    }

    /// Calls `body` with the bytes written.
    @inlinable
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<written])) }
    }

    /// Makes room for `count` more bytes (an estimate saves the buffer's regrowth copies): reserved
    /// capacity, touched only as it is written.
    public mutating func reserve(_ count: Int) { storage.reserveCapacity(written + count) }

    /// Makes the buffer at least `needed` bytes long, doubling it (so appends stay amortised O(1)),
    /// but within the capacity the array already has, reserved or kept by a buffer handed back for
    /// reuse (cut to its last text by `takeBytes`), before it allocates anew: the spare room is
    /// zeroed a doubling at a time, not all at once.
    @usableFromInline mutating func grow(to needed: Int) {
        var size = max(needed, storage.count * 2, 64)
        if needed <= storage.capacity { size = min(size, storage.capacity) }
        storage.append(contentsOf: repeatElement(0, count: size - storage.count))
    }

    /// Copies `length` bytes from `source` to the end.
    @inlinable @inline(__always)
    mutating func append(_ source: UnsafeRawPointer, _ length: Int) {
        let end = written + length
        if end > storage.count { grow(to: end) }
        let start = written
        storage.withUnsafeMutableBytes { Self.copy(from: source, to: $0.baseAddress! + start, length) }
        written = end
    }

    /// Copies `length` bytes. Most of the report's writes are a few bytes (a key, a count's digits),
    /// for which a call to `memmove` through the PLT cost more than the copy: up to 16 bytes are
    /// copied inline as two overlapping loads and stores (each reads and writes only inside the
    /// `length` bytes), longer runs by `copyMemory`.
    @inlinable @inline(__always)
    static func copy(from source: UnsafeRawPointer, to target: UnsafeMutableRawPointer, _ length: Int) {
        if length >= 8 {
            guard length <= 16 else { return target.copyMemory(from: source, byteCount: length) }
            let head = source.loadUnaligned(as: UInt64.self)
            let tail = source.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)
            target.storeBytes(of: head, as: UInt64.self)
            target.storeBytes(of: tail, toByteOffset: length - 8, as: UInt64.self)
        } else if length >= 4 {
            let head = source.loadUnaligned(as: UInt32.self)
            let tail = source.loadUnaligned(fromByteOffset: length - 4, as: UInt32.self)
            target.storeBytes(of: head, as: UInt32.self)
            target.storeBytes(of: tail, toByteOffset: length - 4, as: UInt32.self)
        } else if length > 0 {
            // 1 to 3 bytes: the first, the middle and the last (some of them the same byte).
            let first = source.load(as: UInt8.self)
            let middle = source.load(fromByteOffset: length >> 1, as: UInt8.self)
            let last = source.load(fromByteOffset: length - 1, as: UInt8.self)
            target.storeBytes(of: first, as: UInt8.self)
            target.storeBytes(of: middle, toByteOffset: length >> 1, as: UInt8.self)
            target.storeBytes(of: last, toByteOffset: length - 1, as: UInt8.self)
        }
    }

    /// Appends one byte.
    @inlinable @inline(__always)
    mutating func append(_ byte: UInt8) {
        if written == storage.count { grow(to: written + 1) }
        storage[written] = byte
        written += 1
    }

    /// Writes an ASCII literal such as `,"key":` as it is.
    @inlinable @inline(__always)
    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { utf8 in
            if utf8.count == 1 { append(utf8[0]) } else if let base = utf8.baseAddress { append(base, utf8.count) }
        }
    }

    /// Writes a decimal integer.
    @inlinable
    public mutating func int(_ value: Int) {
        if value >= 0 && value < 10 {
            append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        // The digits counted (an Int's magnitude is below 10^19, so `bound` cannot overflow), then
        // written backwards into place.
        var magnitude = value.magnitude
        var digits = 1
        var bound: UInt = 10
        while magnitude >= bound {
            digits += 1
            bound &*= 10
        }
        let length = digits + (value < 0 ? 1 : 0)
        if written + length > storage.count { grow(to: written + length) }
        let start = written
        storage.withUnsafeMutableBufferPointer { buffer in
            var index = start + length
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { buffer[start] = UInt8(ascii: "-") }
        }
        written += length
    }

    /// Writes `text` as a quoted JSON string (RFC 8259), escaping quotes, backslashes and control
    /// characters; text with none of them (names, paths, ids: nearly always) is copied at once.
    @inlinable
    public mutating func string(_ text: String) {
        append(UInt8(ascii: "\""))
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                if let base = utf8.baseAddress { append(base, utf8.count) }
                return true
            }
            return false
        }
        if copied != true { escaped(text.utf8) }
        append(UInt8(ascii: "\""))
    }

    @usableFromInline mutating func escaped(_ utf8: String.UTF8View) {
        let hex: StaticString = "0123456789abcdef"
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0..<0x20:
                raw("\\u00")
                hex.withUTF8Buffer { digits in
                    append(digits[Int(byte >> 4)])
                    append(digits[Int(byte & 0xF)])
                }
            default: append(byte)
            }
        }
    }

    /// Writes UTF-8 bytes as a quoted JSON string, exactly as `string(String(decoding: utf8, as:
    /// UTF8.self))` would: printable ASCII with no quote or backslash (nearly always) is copied at
    /// once, anything else goes through `String` (which repairs invalid UTF-8) and `string`.
    @inlinable
    public mutating func string(utf8: UnsafeBufferPointer<UInt8>) {
        guard utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x80 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        else { return string(String(decoding: utf8, as: UTF8.self)) }
        append(UInt8(ascii: "\""))
        if let base = utf8.baseAddress { append(base, utf8.count) }
        append(UInt8(ascii: "\""))
    }

    /// Writes already-valid JSON bytes (a number) as they are.
    @inlinable
    public mutating func json(utf8: UnsafeBufferPointer<UInt8>) {
        if let base = utf8.baseAddress { append(base, utf8.count) }
    }

    /// Writes already-valid JSON bytes as they are.
    @inlinable
    public mutating func json(_ raw: [UInt8]) {
        raw.withUnsafeBytes { if let base = $0.baseAddress { append(base, $0.count) } }
    }

    /// Writes already-valid JSON text (a number as PostgreSQL printed it) as it is.
    @inlinable
    public mutating func json(text: String) {
        var text = text
        text.withUTF8 { if let base = $0.baseAddress { append(base, $0.count) } }
    }
}

/// Object keys encoded once (`"name":` each), for writing the same keys many times: a report's
/// column names, and the event names every row of a per-link report repeats.
public final class JSONKeys: Sendable {
    /// Every key's `"name":`, one after another.
    @usableFromInline let bytes: [UInt8]
    /// Where each key starts in `bytes`, and after the last key, its end.
    @usableFromInline let starts: [Int]

    /// The keys of `names`, in order.
    public init(_ names: [String]) {
        var text = JSONText(capacity: names.reduce(0) { $0 + $1.utf8.count + 3 })
        var starts = [0]
        starts.reserveCapacity(names.count + 1)
        for name in names {
            text.string(name)
            text.raw(":")
            starts.append(text.count)
        }
        bytes = text.bytes
        self.starts = starts
    }

    /// How many keys.
    public var count: Int { starts.count - 1 }

    /// No keys.
    public static let none = JSONKeys([])
}

extension JSONText {
    /// Writes key `index` of `keys` (`"name":`).
    @inlinable @inline(__always)
    public mutating func key(_ keys: JSONKeys, _ index: Int) {
        let start = keys.starts[index]
        let length = keys.starts[index + 1] - start
        keys.bytes.withUnsafeBytes { append($0.baseAddress! + start, length) }
    }
}
