// Lone UTF-16 surrogate escapes.
//
// RFC 8259's grammar allows any `\uXXXX`, so `"\ud83d"` (half of an emoji) is a JSON text, though
// not a Unicode string (§8.2). JavaScript engines write one for a string cut inside a surrogate
// pair (`JSON.stringify` escapes lone surrogates since ES2019): a React Native app that truncates
// a title sends it. Refusing the request would lose the event, since SDKs never retry; PostgreSQL's
// jsonb refuses it too. So when the scanner meets one (`JSONError.Reason.loneSurrogate`),
// `JSONDocument` rewrites each lone surrogate escape of a copy as `\ufffd` (the same six bytes)
// and scans that: strings read U+FFFD, raw `data` copied into an envelope is Unicode, and the
// normaliser adds a warning. Pairs are kept. The common path pays nothing.

/// The UTF-16 code unit of a `\uXXXX` escape starting at `i`, or nil when there is none there.
@inline(__always) func escapedUnit(_ base: UnsafePointer<UInt8>, count n: Int, at i: Int) -> UInt32? {
    guard i &+ 6 <= n, base[i] == UInt8(ascii: "\\"), base[i &+ 1] == UInt8(ascii: "u") else { return nil }
    var unit: UInt32 = 0
    for k in 2..<6 {
        guard let digit = hexValue(base[i &+ k]) else { return nil }
        unit = unit << 4 | UInt32(digit)
    }
    return unit
}

/// True for a surrogate code unit (U+D800-U+DFFF).
@inline(__always) func isSurrogate(_ unit: UInt32) -> Bool { unit & 0xF800 == 0xD800 }

/// For the surrogate `unit` escaped just before `i`: the low surrogate escaped at `i` that completes
/// it into a pair, or nil when it is lone (a low surrogate, or a high one without its low half).
@inline(__always) func lowHalf(of unit: UInt32, _ base: UnsafePointer<UInt8>, count n: Int, at i: Int) -> UInt32? {
    guard unit <= 0xDBFF, let low = escapedUnit(base, count: n, at: i), low & 0xFC00 == 0xDC00 else { return nil }
    return low
}

/// Rewrites, in place, each lone surrogate escape in JSON text as `\ufffd` (same length). The text
/// need not be valid: only whole `\uXXXX` escapes inside it are read and rewritten.
func replaceLoneSurrogateEscapes(_ text: UnsafeMutableBufferPointer<UInt8>) {
    guard let base = text.baseAddress else { return }
    let n = text.count
    var i = 0
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
        if isSurrogate(unit) {
            if lowHalf(of: unit, base, count: n, at: i &+ 6) != nil {
                i &+= 12
                continue
            }
            for (k, digit) in "fffd".utf8.enumerated() { base[i &+ 2 &+ k] = digit }
        }
        i &+= 6
    }
}

/// `bytes` with each lone surrogate escape rewritten as `\ufffd`.
func replacingLoneSurrogateEscapes(_ bytes: [UInt8]) -> [UInt8] {
    var copy = bytes
    copy.withUnsafeMutableBufferPointer { replaceLoneSurrogateEscapes($0) }
    return copy
}
