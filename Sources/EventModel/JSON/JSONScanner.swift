// The single-pass validating scanner behind JSONDocument.
//
// Strict RFC 8259: one value, optional whitespace around it; strings must be valid UTF-8 without
// raw control characters, escapes must be one of \" \\ \/ \b \f \n \r \t \uXXXX and a \u high
// surrogate must be followed by a \u low surrogate; numbers must not have leading zeros and need
// digits before and after `.`/`e`. The first error stops the scan with its byte offset. (A lone
// surrogate stops it with `.loneSurrogate`, and `JSONDocument` scans a repaired copy instead.)
//
// Speed: the scan runs over an UnsafeBufferPointer without bounds checks, strings are skimmed
// eight bytes at a time (SWAR) until a quote, backslash, control or non-ASCII byte, and tokens go
// into one preallocated array. Nesting is tracked on an explicit stack, never by recursion, so
// depth is bounded only by `maxDepth`.

enum JSONScanner {
    /// Scans `bytes` into a tape of at most `maxValues` tokens (values and keys), so the tape's
    /// memory is bounded by `maxValues` x 16 bytes whatever the input (a dense `[0,0,...]` has one
    /// value per 2 bytes: 8x its size in tokens).
    static func scan(_ bytes: [UInt8], maxDepth: Int, maxValues: Int) throws(JSONError) -> [Token] {
        guard bytes.count < Int(UInt32.max) else { throw JSONError(.tooLarge, at: 0) }
        var tape: [Token] = []
        // SDK JSON has about one value per 12 bytes; the array grows if a body is denser, never past
        // the limit (a key may follow the last value checked, hence the slack). Sizing for the worst
        // case, one value per 2 bytes, would cost 8x the body in memory.
        let maxValues = max(maxValues, 1)
        tape.reserveCapacity(min(bytes.count / 12 + 16, maxValues + 2))
        guard !bytes.isEmpty else { throw JSONError(.unexpectedEnd, at: 0) }
        // Every value or key takes at least one byte and one separator or bracket, so n bytes hold
        // at most n / 2 + 1 of them: a text that short cannot pass the limit and is scanned without
        // counting (counting cost the scan alone ~6 % on SDK bodies, docs/ingest-performance.md).
        let mayPassLimit = bytes.count / 2 + 1 > maxValues
        let result = bytes.withUnsafeBufferPointer { (buffer) -> JSONError? in
            do throws(JSONError) {
                // Token depths are 16-bit.
                let depth = min(maxDepth, Int(UInt16.max))
                if mayPassLimit {
                    var scanner = Scanner<CountedTape>(p: buffer, maxDepth: depth)
                    try scanner.run(&tape, maxValues: maxValues)
                } else {
                    var scanner = Scanner<FreeTape>(p: buffer, maxDepth: depth)
                    try scanner.run(&tape, maxValues: maxValues)
                }
                return nil
            } catch {
                return error
            }
        }
        if let result { throw result }
        return tape
    }
}

/// Whether a scan counts its tokens against the limit (a type, so each kind is its own
/// specialisation and the common one carries no check).
private protocol TapeLimit { static var isCounted: Bool { get } }
private enum CountedTape: TapeLimit { static var isCounted: Bool { true } }
private enum FreeTape: TapeLimit { static var isCounted: Bool { false } }

private struct Scanner<Limit: TapeLimit> {
    let p: UnsafeBufferPointer<UInt8>
    let base: UnsafePointer<UInt8>
    let n: Int
    let maxDepth: Int
    var stack: [UInt32] = []

    init(p: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.p = p
        self.base = p.baseAddress!
        self.n = p.count
        self.maxDepth = maxDepth
        stack.reserveCapacity(min(maxDepth, 64))
    }

    @inline(__always) func byte(_ i: Int) -> UInt8 { base[i] }

    @inline(__always) func skipWhitespace(_ start: Int) -> Int {
        var i = start
        while i < n {
            let b = byte(i)
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { break }
            i &+= 1
        }
        return i
    }

    mutating func run(_ tape: inout [Token], maxValues: Int) throws(JSONError) {
        var i = 0
        // The tape length at which `grow` runs: the capacity left for a value and a key, or the limit.
        var growAt = min(tape.capacity - 1, maxValues)
        value: while true {
            i = skipWhitespace(i)
            guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
            if Limit.isCounted, tape.count >= growAt { growAt = try Self.grow(&tape, maxValues: maxValues, at: i) }
            let depth = UInt16(truncatingIfNeeded: stack.count)
            let c = byte(i)
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard stack.count < maxDepth else { throw JSONError(.tooDeep, at: i) }
                let isObject = c == UInt8(ascii: "{")
                stack.append(UInt32(truncatingIfNeeded: tape.count))
                tape.append(
                    Token(
                        start: UInt32(truncatingIfNeeded: i), end: 0, next: 0,
                        kind: isObject ? JSONKind.object.rawValue : JSONKind.array.rawValue, flags: 0, depth: depth))
                i = skipWhitespace(i &+ 1)
                guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
                if byte(i) == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    i &+= 1
                    close(&tape, at: i)
                } else if isObject {
                    i = try key(&tape, at: i, depth: depth &+ 1)
                    continue value
                } else {
                    continue value
                }
            case UInt8(ascii: "\""):
                i = try string(&tape, at: i, depth: depth)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                i = try number(&tape, at: i, depth: depth)
            case UInt8(ascii: "t"):
                i = try literal(&tape, at: i, depth: depth, "true", kind: .bool)
            case UInt8(ascii: "f"):
                i = try literal(&tape, at: i, depth: depth, "false", kind: .bool)
            case UInt8(ascii: "n"):
                i = try literal(&tape, at: i, depth: depth, "null", kind: .null)
            default:
                throw JSONError(.unexpectedByte, at: i)
            }
            // A value is complete: continue the enclosing container or finish.
            while let top = stack.last {
                i = skipWhitespace(i)
                guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
                let b = byte(i)
                let isObject = tape[Int(top)].kind == JSONKind.object.rawValue
                if b == UInt8(ascii: ",") {
                    i = skipWhitespace(i &+ 1)
                    if isObject {
                        guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
                        i = try key(&tape, at: i, depth: UInt16(truncatingIfNeeded: stack.count))
                    }
                    continue value
                }
                guard b == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
                    throw JSONError(.unexpectedByte, at: i)
                }
                i &+= 1
                close(&tape, at: i)
            }
            break
        }
        i = skipWhitespace(i)
        guard i == n else { throw JSONError(.trailingGarbage, at: i) }
    }

    /// Makes room for a value and the key that may follow it (the tape never grows on its own, so
    /// its capacity stays within `maxValues` plus that slack); throws `.tooManyValues` at the value
    /// that would pass the limit, so a text of N values and keys is scanned iff N <= `maxValues`.
    @inline(never) static func grow(_ tape: inout [Token], maxValues: Int, at offset: Int) throws(JSONError) -> Int {
        guard tape.count < maxValues else { throw JSONError(.tooManyValues, at: offset) }
        if tape.count &+ 2 > tape.capacity { tape.reserveCapacity(min(max(tape.capacity * 2, 16), maxValues + 2)) }
        return min(tape.capacity - 1, maxValues)
    }

    @inline(__always) mutating func close(_ tape: inout [Token], at end: Int) {
        let top = Int(stack.removeLast())
        tape[top].end = UInt32(truncatingIfNeeded: end)
        tape[top].next = UInt32(truncatingIfNeeded: tape.count)
    }

    /// Scans `"key" :` and returns the offset after the colon.
    @inline(__always) func key(_ tape: inout [Token], at start: Int, depth: UInt16) throws(JSONError) -> Int {
        guard byte(start) == UInt8(ascii: "\"") else { throw JSONError(.unexpectedByte, at: start) }
        var i = try string(&tape, at: start, depth: depth)
        i = skipWhitespace(i)
        guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
        guard byte(i) == UInt8(ascii: ":") else { throw JSONError(.unexpectedByte, at: i) }
        return i &+ 1
    }

    func literal(_ tape: inout [Token], at start: Int, depth: UInt16, _ word: StaticString, kind: JSONKind)
        throws(JSONError) -> Int
    {
        let count = word.utf8CodeUnitCount
        let w = word.utf8Start
        for k in 0..<count {
            guard start &+ k < n else { throw JSONError(.unexpectedEnd, at: n) }
            guard byte(start &+ k) == w[k] else { throw JSONError(.unexpectedByte, at: start &+ k) }
        }
        tape.append(
            Token(
                start: UInt32(truncatingIfNeeded: start), end: UInt32(truncatingIfNeeded: start &+ count),
                next: UInt32(truncatingIfNeeded: tape.count &+ 1), kind: kind.rawValue, flags: 0, depth: depth))
        return start &+ count
    }

    func number(_ tape: inout [Token], at start: Int, depth: UInt16) throws(JSONError) -> Int {
        var i = start
        var isInteger = true
        if byte(i) == UInt8(ascii: "-") { i &+= 1 }
        guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
        let first = byte(i)
        if first == UInt8(ascii: "0") {
            i &+= 1
            if i < n, byte(i) &- 48 < 10 { throw JSONError(.invalidNumber, at: i) }
        } else if first &- 49 < 9 {
            i &+= 1
            while i < n, byte(i) &- 48 < 10 { i &+= 1 }
        } else {
            throw JSONError(.invalidNumber, at: i)
        }
        if i < n, byte(i) == UInt8(ascii: ".") {
            isInteger = false
            i &+= 1
            guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
            guard byte(i) &- 48 < 10 else { throw JSONError(.invalidNumber, at: i) }
            while i < n, byte(i) &- 48 < 10 { i &+= 1 }
        }
        if i < n, byte(i) | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            i &+= 1
            if i < n, byte(i) == UInt8(ascii: "+") || byte(i) == UInt8(ascii: "-") { i &+= 1 }
            guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
            guard byte(i) &- 48 < 10 else { throw JSONError(.invalidNumber, at: i) }
            while i < n, byte(i) &- 48 < 10 { i &+= 1 }
        }
        tape.append(
            Token(
                start: UInt32(truncatingIfNeeded: start), end: UInt32(truncatingIfNeeded: i),
                next: UInt32(truncatingIfNeeded: tape.count &+ 1), kind: JSONKind.number.rawValue,
                flags: isInteger ? Token.isInteger : 0, depth: depth))
        return i
    }

    /// Scans a string starting at its opening quote; returns the offset after the closing quote.
    func string(_ tape: inout [Token], at quote: Int, depth: UInt16) throws(JSONError) -> Int {
        var i = quote &+ 1
        var flags: UInt8 = 0
        let raw = UnsafeRawPointer(base)
        while true {
            // Skim eight plain ASCII bytes at a time.
            while i &+ 8 <= n {
                let v = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                let special = Scanner.specialMask(v)
                if special == 0 {
                    i &+= 8
                } else {
                    i &+= special.trailingZeroBitCount >> 3
                    break
                }
            }
            guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
            let b = byte(i)
            if b == UInt8(ascii: "\"") {
                break
            } else if b == UInt8(ascii: "\\") {
                flags = Token.hasEscapes
                i = try escape(at: i)
            } else if b < 0x20 {
                throw JSONError(.controlCharacter, at: i)
            } else if b >= 0x80 {
                i = try utf8(at: i)
            } else {
                i &+= 1
            }
        }
        tape.append(
            Token(
                start: UInt32(truncatingIfNeeded: quote &+ 1), end: UInt32(truncatingIfNeeded: i),
                next: UInt32(truncatingIfNeeded: tape.count &+ 1), kind: JSONKind.string.rawValue,
                flags: flags, depth: depth))
        return i &+ 1
    }

    /// Nonzero when one of the eight bytes is `"`, `\`, below 0x20 or at least 0x80. The lowest
    /// set bit always marks the first such byte (borrow false positives only occur above it).
    @inline(__always) static func specialMask(_ v: UInt64) -> UInt64 {
        escapeMask(v) | v & 0x8080_8080_8080_8080
    }

    /// Validates one escape starting at the backslash; returns the offset after it.
    func escape(at start: Int) throws(JSONError) -> Int {
        var i = start &+ 1
        guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
        switch byte(i) {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return i &+ 1
        case UInt8(ascii: "u"):
            let unit = try hex4(at: i &+ 1)
            i &+= 5
            if unit >= 0xDC00 && unit <= 0xDFFF { throw JSONError(.loneSurrogate, at: start) }
            guard unit >= 0xD800 && unit <= 0xDBFF else { return i }
            guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
            guard byte(i) == UInt8(ascii: "\\") else { throw JSONError(.loneSurrogate, at: start) }
            guard i &+ 1 < n else { throw JSONError(.unexpectedEnd, at: n) }
            guard byte(i &+ 1) == UInt8(ascii: "u") else { throw JSONError(.loneSurrogate, at: start) }
            let low = try hex4(at: i &+ 2)
            guard low >= 0xDC00 && low <= 0xDFFF else { throw JSONError(.loneSurrogate, at: start) }
            return i &+ 6
        default:
            throw JSONError(.invalidEscape, at: start)
        }
    }

    func hex4(at start: Int) throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for k in 0..<4 {
            let i = start &+ k
            guard i < n else { throw JSONError(.unexpectedEnd, at: n) }
            guard let digit = hexValue(byte(i)) else { throw JSONError(.invalidEscape, at: i) }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Validates one multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, at most
    /// U+10FFFF); returns the offset after it.
    func utf8(at start: Int) throws(JSONError) -> Int {
        let b0 = byte(start)
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw JSONError(.invalidUTF8, at: start)
        }
        guard start &+ length <= n else {
            // Report a truncated sequence as invalid only if a byte present is wrong.
            for k in 1..<(n &- start) {
                let b = byte(start &+ k)
                let (lo, hi) = k == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
                if b < lo || b > hi { throw JSONError(.invalidUTF8, at: start) }
            }
            throw JSONError(.unexpectedEnd, at: n)
        }
        let b1 = byte(start &+ 1)
        guard b1 >= low && b1 <= high else { throw JSONError(.invalidUTF8, at: start) }
        for k in 2..<max(length, 2) {
            guard byte(start &+ k) & 0xC0 == 0x80 else { throw JSONError(.invalidUTF8, at: start) }
        }
        return start &+ length
    }
}

/// Nonzero when one of the eight bytes of `v` is `"`, `\\` or below 0x20: the bytes a JSON string
/// must escape (SWAR: the high bit of each such byte is set; bytes >= 0x80 never are).
@inline(__always) func escapeMask(_ v: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let quote = v ^ (ones &* 0x22)
    let slash = v ^ (ones &* 0x5C)
    let hasQuote = (quote &- ones) & ~quote
    let hasSlash = (slash &- ones) & ~slash
    let hasControl = (v &- ones &* 0x20) & ~v
    return (hasQuote | hasSlash | hasControl) & 0x8080_8080_8080_8080
}

@inline(__always) func hexValue(_ b: UInt8) -> UInt8? {
    switch b {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): b &- 48
    case UInt8(ascii: "a")...UInt8(ascii: "f"): b &- 87
    case UInt8(ascii: "A")...UInt8(ascii: "F"): b &- 55
    default: nil
    }
}
