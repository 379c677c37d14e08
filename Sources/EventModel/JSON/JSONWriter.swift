// Appending JSON to a byte buffer: the envelope encoder's building blocks.

enum JSONWriter {
    /// Appends `"text"` with the escapes RFC 8259 requires (`"`, `\`, control characters);
    /// runs of plain bytes are copied in one go.
    static func appendString(_ text: String, to buffer: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendString(bytes: $0, to: &buffer) }
    }

    /// Appends already-UTF-8 bytes as a JSON string.
    static func appendString(bytes: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        var runStart = 0
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") {
                i += 1
                continue
            }
            if runStart < i { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i])) }
            buffer.append(UInt8(ascii: "\\"))
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): buffer.append(b)
            case 0x0A: buffer.append(UInt8(ascii: "n"))
            case 0x0D: buffer.append(UInt8(ascii: "r"))
            case 0x09: buffer.append(UInt8(ascii: "t"))
            case 0x08: buffer.append(UInt8(ascii: "b"))
            case 0x0C: buffer.append(UInt8(ascii: "f"))
            default:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                buffer.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]])
            }
            i += 1
            runStart = i
        }
        if runStart < n { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<n])) }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Appends a literal such as `,"key":` (ASCII, no escaping).
    @inline(__always) static func appendRaw(_ literal: StaticString, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends `"YYYY-MM-DDTHH:MM:SS.mmmZ"`.
    static func appendTimestamp(_ time: Timestamp, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        time.appendISO8601(to: &buffer)
        buffer.append(UInt8(ascii: "\""))
    }

    /// Appends a string or `null`.
    static func appendOptionalString(_ text: String?, to buffer: inout [UInt8]) {
        if let text { appendString(text, to: &buffer) } else { appendRaw("null", to: &buffer) }
    }

    /// Appends a finite number: integers without a fraction, others in Swift's shortest form.
    static func appendNumber(_ value: Double, to buffer: inout [UInt8]) {
        if value == value.rounded(), value.magnitude < 9.0e15 {
            buffer.append(contentsOf: String(Int64(value)).utf8)
        } else {
            buffer.append(contentsOf: String(value).utf8)
        }
    }
}
