// `\uXXXX` escapes that are valid JSON but that a reader downstream refuses, rewritten as `\ufffd`
// (the same six bytes, so offsets and lengths are kept).
//
// Lone surrogates. RFC 8259's grammar allows any `\uXXXX`, so `"\ud83d"` (half of an emoji) is a
// JSON text, though not a Unicode string (§8.2). JavaScript engines write one for a string cut
// inside a surrogate pair (`JSON.stringify` escapes lone surrogates since ES2019): a React Native
// app that truncates a title sends it. Refusing the request would lose the event, since SDKs never
// retry; PostgreSQL's jsonb refuses it too. So when the scanner meets one
// (`JSONError.Reason.loneSurrogate`), `JSONDocument` repairs a copy and scans that: strings read
// U+FFFD, raw `data` copied into an envelope is Unicode, and the normaliser adds a warning. Pairs
// are kept. The common path pays nothing.
//
// NUL. jsonb refuses `\u0000` as well; the aggregator's COPY encoder repairs it (StagingEncoder).

/// Which escapes `repairingEscapes(_:_:)` rewrites as `\ufffd`.
package struct EscapeRepairs: OptionSet, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A surrogate escape without its other half.
    package static let loneSurrogates = EscapeRepairs(rawValue: 1)
    /// `\u0000`.
    package static let nul = EscapeRepairs(rawValue: 2)
}

/// `text` with each escape of `repairs` rewritten as `\ufffd` (same length), or nil when it has
/// none (then nothing is copied). The text need not be valid JSON: only whole `\uXXXX` escapes are
/// read, and `\\` is skipped as one escaped character, so `\\u0000` is left alone.
package func repairingEscapes(_ text: [UInt8], _ repairs: EscapeRepairs) -> [UInt8]? {
    text.withUnsafeBufferPointer { source -> [UInt8]? in
        guard let base = source.baseAddress, var next = nextRepair(base, count: source.count, from: 0, repairs)
        else { return nil }
        var copy = text
        copy.withUnsafeMutableBufferPointer { target in
            while true {
                for (k, digit) in "fffd".utf8.enumerated() { target[next &+ 2 &+ k] = digit }
                guard let following = nextRepair(base, count: source.count, from: next &+ 6, repairs) else { break }
                next = following
            }
        }
        return copy
    }
}

/// The offset of the first escape at or after `start` that `repairs` rewrites, or nil.
private func nextRepair(_ base: UnsafePointer<UInt8>, count n: Int, from start: Int, _ repairs: EscapeRepairs) -> Int? {
    var i = start
    while i < n {
        guard base[i] == UInt8(ascii: "\\") else {
            i &+= 1
            continue
        }
        // Outside strings valid JSON has no backslash; inside, `\\` and the like are two bytes.
        guard let unit = escapedUnit(base, count: n, at: i) else {
            i &+= 2
            continue
        }
        if unit & 0xF800 == 0xD800 {  // a surrogate
            if unit <= 0xDBFF, let low = escapedUnit(base, count: n, at: i &+ 6), low & 0xFC00 == 0xDC00 {
                i &+= 12  // a pair
                continue
            }
            if repairs.contains(.loneSurrogates) { return i }
        } else if unit == 0, repairs.contains(.nul) {
            return i
        }
        i &+= 6
    }
    return nil
}

/// The UTF-16 code unit of a `\uXXXX` escape starting at `i`, or nil when there is none there.
@inline(__always) private func escapedUnit(_ base: UnsafePointer<UInt8>, count n: Int, at i: Int) -> UInt32? {
    guard i &+ 6 <= n, base[i] == UInt8(ascii: "\\"), base[i &+ 1] == UInt8(ascii: "u") else { return nil }
    var unit: UInt32 = 0
    for k in 2..<6 {
        guard let digit = hexValue(base[i &+ k]) else { return nil }
        unit = unit << 4 | UInt32(digit)
    }
    return unit
}
