// Writing JSON bytes: the envelope encoder's building blocks.
//
// The encoder first computes an upper bound of the line's length, reserves that much once, and
// then writes through a raw cursor: no per-fragment capacity or uniqueness checks. Every write
// below must stay within the bound computed by `JSONWriter.bound(of:)` and friends.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A write position inside a buffer sized in advance.
struct JSONWriter {
    private(set) var cursor: UnsafeMutablePointer<UInt8>
    /// The last day formatted, so the three timestamps of an envelope share one calendar computation.
    private var cachedDay: Int64 = .min
    private var cachedDate: (year: Int64, month: Int64, day: Int64) = (0, 0, 0)

    init(_ start: UnsafeMutablePointer<UInt8>) {
        cursor = start
    }

    /// The most bytes `string(_:)` can write for `text`: every byte escaped as `\u00XX`, plus quotes.
    static func bound(of text: String) -> Int { text.utf8.count * 6 + 2 }

    /// The most bytes `timestamp(_:)` writes, with quotes.
    static let timestampBound = 26

    @inline(__always) mutating func byte(_ b: UInt8) {
        cursor.pointee = b
        cursor += 1
    }

    /// Writes an ASCII literal such as `,"key":`.
    @inline(__always) mutating func raw(_ literal: StaticString) {
        let count = literal.utf8CodeUnitCount
        memcpy(cursor, literal.utf8Start, count)
        cursor += count
    }

    /// Writes bytes verbatim (raw JSON).
    mutating func raw(bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        memcpy(cursor, base, bytes.count)
        cursor += bytes.count
    }

    /// Writes a value the scanner validated, as one line: outside strings CR and LF can only be
    /// whitespace (the scanner refuses them raw inside strings), so they become spaces, and an
    /// envelope is always exactly one NDJSON line even when the client sent pretty-printed data.
    mutating func rawJSON(bytes: UnsafeBufferPointer<UInt8>) {
        let start = cursor
        raw(bytes: bytes)
        // Compact JSON has no line breaks: two vectorised searches, and the byte loop only when
        // one is found.
        let count = cursor - start
        guard memchr(start, 0x0A, count) != nil || memchr(start, 0x0D, count) != nil else { return }
        var position = start
        while position < cursor {
            if position.pointee == 0x0A || position.pointee == 0x0D { position.pointee = 0x20 }
            position += 1
        }
    }

    /// `rawJSON(bytes:)` for an array.
    mutating func rawJSON(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { rawJSON(bytes: $0) }
    }

    /// Moves past `count` bytes written directly at `cursor`.
    mutating func advance(by count: Int) {
        cursor += count
    }

    /// Writes bytes verbatim (raw JSON).
    mutating func raw(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { source in
            guard let base = source.baseAddress else { return }
            memcpy(cursor, base, source.count)
            cursor += source.count
        }
    }

    /// Writes `"text"` with the escapes RFC 8259 requires (`"`, `\`, control characters).
    mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { string(bytes: $0) }
    }

    mutating func string(bytes: UnsafeBufferPointer<UInt8>) {
        byte(UInt8(ascii: "\""))
        var out = cursor
        guard let base = bytes.baseAddress else {
            byte(UInt8(ascii: "\""))
            return
        }
        // Eight bytes at a time while none needs escaping (ids, names: nearly always), then byte by byte.
        var i = 0
        let n = bytes.count
        while i &+ 8 <= n {
            let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            if escapeMask(word) != 0 { break }
            UnsafeMutableRawPointer(out).storeBytes(of: word, as: UInt64.self)
            out += 8
            i &+= 8
        }
        for b in UnsafeBufferPointer(rebasing: bytes[i...]) {
            if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") {
                out.pointee = b
                out += 1
                continue
            }
            out.pointee = UInt8(ascii: "\\")
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out[1] = b
            case 0x0A: out[1] = UInt8(ascii: "n")
            case 0x0D: out[1] = UInt8(ascii: "r")
            case 0x09: out[1] = UInt8(ascii: "t")
            case 0x08: out[1] = UInt8(ascii: "b")
            case 0x0C: out[1] = UInt8(ascii: "f")
            default:
                out[1] = UInt8(ascii: "u")
                out[2] = UInt8(ascii: "0")
                out[3] = UInt8(ascii: "0")
                out[4] = JSONWriter.hexDigit(b >> 4)
                out[5] = JSONWriter.hexDigit(b & 0xF)
                out += 4
            }
            out += 2
        }
        cursor = out
        byte(UInt8(ascii: "\""))
    }

    /// Writes a string or `null`.
    mutating func optionalString(_ text: String?) {
        if let text { string(text) } else { raw("null") }
    }

    /// Writes a string value of a scanned document (unescaped, then escaped as the encoder does)
    /// or `null`.
    mutating func optionalString(_ value: JSONValue?) {
        guard let value, value.withStringBytes({ string(bytes: $0) }) != nil else { return raw("null") }
    }

    @inline(__always) static func hexDigit(_ v: UInt8) -> UInt8 {
        v < 10 ? 48 + v : 87 + v
    }

    @inline(__always) private mutating func twoDigits(_ v: Int64) {
        let tens = v / 10
        cursor[0] = UInt8(truncatingIfNeeded: 48 + tens)
        cursor[1] = UInt8(truncatingIfNeeded: 48 + v - tens * 10)
        cursor += 2
    }

    /// Writes `"YYYY-MM-DDTHH:MM:SS.mmmZ"` (UTC, milliseconds). An instant outside years
    /// 0000-9999 is written as the nearest end of them, as `Timestamp.iso8601` writes it: until
    /// 2026-12-04 only the year was clamped here, so an envelope's `client_ts` of
    /// `0000-01-01T00:30:00+01:00` read `0000-12-31T23:30:00.000Z`, a year late.
    mutating func timestamp(_ time: Timestamp) {
        let millis = min(
            max(Timestamp.floorDiv(time.microseconds, 1000), Timestamp.formattableMillis.lowerBound),
            Timestamp.formattableMillis.upperBound)
        let days = Timestamp.floorDiv(millis, 86_400_000)
        let msOfDay = millis - days * 86_400_000
        if days != cachedDay {
            cachedDay = days
            cachedDate = Timestamp.civil(fromDays: days)
        }
        let year = cachedDate.year
        byte(UInt8(ascii: "\""))
        twoDigits(year / 100)
        twoDigits(year % 100)
        byte(UInt8(ascii: "-"))
        twoDigits(cachedDate.month)
        byte(UInt8(ascii: "-"))
        twoDigits(cachedDate.day)
        byte(UInt8(ascii: "T"))
        let seconds = msOfDay / 1000
        twoDigits(seconds / 3600)
        byte(UInt8(ascii: ":"))
        twoDigits(seconds / 60 % 60)
        byte(UInt8(ascii: ":"))
        twoDigits(seconds % 60)
        byte(UInt8(ascii: "."))
        let ms = msOfDay % 1000
        byte(UInt8(truncatingIfNeeded: 48 + ms / 100))
        twoDigits(ms % 100)
        raw("Z\"")
    }

    /// `timestamp(_:)`'s text (with quotes), formatted once for a time written on many lines
    /// (`received_at`, `sent_at`) and held inline: no array to allocate and free per request.
    struct TimestampText {
        /// At least `timestampBound` bytes.
        private var storage = InlineArray<32, UInt8>(repeating: 0)
        private var count = 0

        init(_ time: Timestamp) {
            var mutable = storage.mutableSpan
            count = mutable.withUnsafeMutableBufferPointer { buffer in
                var w = JSONWriter(buffer.baseAddress!)
                w.timestamp(time)
                return w.cursor - buffer.baseAddress!
            }
        }

        /// Writes the text at `writer`'s cursor.
        func write(to writer: inout JSONWriter) {
            let count = count
            storage.span.withUnsafeBufferPointer { writer.raw(bytes: UnsafeBufferPointer(rebasing: $0[..<count])) }
        }
    }

    /// The text `number(_:)` writes.
    static func numberText(_ value: Double) -> String {
        if value == value.rounded(), value.magnitude < 9.0e15 { return String(Int64(value)) }
        return String(value)
    }
}
