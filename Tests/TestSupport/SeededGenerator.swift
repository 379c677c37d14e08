import EventLog

/// A seeded generator (EventLog's SplitMix64, which the benchmarks use), so randomised tests make
/// the same inputs on every run.
package struct SeededGenerator: RandomNumberGenerator {
    private var base: SplitMix64

    package init(state: UInt64) { base = SplitMix64(seed: state) }

    package mutating func next() -> UInt64 { base.next() }

    /// A number in 0..<n (n > 0).
    package mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
