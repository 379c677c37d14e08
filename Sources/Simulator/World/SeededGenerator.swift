/// A deterministic pseudo-random generator (xoshiro256**, seeded through SplitMix64).
///
/// The simulator never touches the system generator: every draw comes from one of these, so a
/// seed reproduces the same world, requests and truth bytes on every machine and Swift version.
/// The helpers below avoid `Int.random(in:using:)`, whose algorithm the standard library may change.
package struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    /// Creates a generator whose whole sequence is fixed by `seed`.
    package init(seed: UInt64) {
        var splitMix = seed
        func nextSplitMix() -> UInt64 {
            splitMix &+= 0x9E37_79B9_7F4A_7C15
            var z = splitMix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        state = (nextSplitMix(), nextSplitMix(), nextSplitMix(), nextSplitMix())
    }

    /// Creates an independent stream for one purpose (`stream` names it), so adding draws in one
    /// part of the generator does not shift every later part.
    package init(seed: UInt64, stream: UInt64) {
        self.init(seed: seed ^ (stream &* 0xD1B5_4A32_D192_ED03))
    }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        let result = rotl(state.1 &* 5, 7) &* 9
        let t = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= t
        state.3 = rotl(state.3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// A uniform integer in `0..<bound` (bound > 0), by multiply-shift (Lemire, no rejection: the
    /// bias is below 2^-40 for the bounds used here).
    package mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0, "bound must be positive")
        return Int(next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    /// A uniform integer in the closed range.
    package mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.upperBound - range.lowerBound + 1)
    }

    /// A uniform 64-bit integer in the closed range.
    package mutating func int64(_ range: ClosedRange<Int64>) -> Int64 {
        range.lowerBound + Int64(below(Int(range.upperBound - range.lowerBound + 1)))
    }

    /// A uniform double in [0, 1).
    package mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// True with probability `p`.
    package mutating func chance(_ p: Double) -> Bool { unit() < p }

    /// One element of a non-empty array.
    package mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

    /// An index drawn with the given non-negative weights (at least one positive).
    package mutating func weighted(_ weights: [Double]) -> Int {
        let total = weights.reduce(0, +)
        var x = unit() * total
        for (index, weight) in weights.enumerated() {
            if x < weight { return index }
            x -= weight
        }
        return weights.count - 1
    }

    /// An exponentially distributed duration with the given mean, in whole seconds (at least 1).
    package mutating func exponentialSeconds(mean: Double) -> Int64 {
        let u = max(unit(), 1e-12)
        return max(1, Int64(-mean * _log(u)))
    }

    /// Random lowercase hex digits.
    package mutating func hex(_ count: Int) -> String {
        let digits = Array("0123456789abcdef")
        return String((0..<count).map { _ in digits[below(16)] })
    }
}

// Natural logarithm without Foundation (keeps this file dependency-free).
private func _log(_ x: Double) -> Double {
    // log(x) = 2 * atanh((x-1)/(x+1)) after scaling x into [0.5, 1) by its binary exponent.
    let exponent = Double(x.exponent)
    let m = x.significand / 2  // in [0.5, 1)
    let y = (m - 1) / (m + 1)
    var term = y
    var sum = 0.0
    var k = 1.0
    let y2 = y * y
    for _ in 0..<40 {
        sum += term / k
        term *= y2
        k += 2
    }
    return 2 * sum + (exponent + 1) * 0.693_147_180_559_945_3
}
