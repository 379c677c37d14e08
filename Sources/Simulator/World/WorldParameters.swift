/// The inputs that fix a world: same parameters, same world, byte for byte.
package struct WorldParameters: Sendable, Equatable {
    /// The app id the world belongs to.
    package var appID: String
    /// Number of links (default 20).
    package var links: Int
    /// Target number of devices (default 1,000); about 60% arrive through links, the rest organic.
    package var devices: Int
    /// Length of the simulated period in days (default 30).
    package var days: Int
    /// Start of the period: UTC midnight, milliseconds since the epoch.
    package var start: Int64
    /// The seed of every random draw.
    package var seed: UInt64

    /// Creates parameters.
    /// - Parameters:
    ///   - start: UTC midnight in milliseconds; other times are truncated to their day.
    package init(appID: String, links: Int = 20, devices: Int = 1000, days: Int = 30, start: Int64, seed: UInt64 = 1) {
        self.appID = appID
        self.links = max(1, links)
        self.devices = max(1, devices)
        self.days = max(1, days)
        self.start = SimulatedTime.dayIndex(start) * SimulatedTime.day
        self.seed = seed
    }
}

/// The shape of the world: shares and rates the generator draws from (documented in docs/simulator.md).
enum WorldShape {
    /// Share of devices that arrive through a link click (the rest are organic).
    static let linkedShare = 0.6
    /// Share of matches that are probabilistic (install 20 s to 14 min after the click).
    static let probabilisticShare = 0.4
    /// Share of linked devices installing 8-10 days after their click (matched but beyond lookback).
    static let lateInstallShare = 0.02
    /// SDK family weights: current, newest, legacy.
    static let sdkWeights = [0.4, 0.4, 0.2]
    /// Share of organic devices whose clock is hours off (they send one batch).
    static let skewedShare = 0.03
    /// Share of other devices that send batches instead of single events.
    static let batchingShare = 0.12
    /// Share of single-sending devices that deliver one session days late.
    static let lateSessionShare = 0.02
    /// Probability that a device comes back on day k (1...30) after install: 0.5 * exp(-k / 9);
    /// after day 30 it is 0.03.
    static func returnProbability(day k: Int) -> Double {
        k <= 30 ? 0.5 * expNeg(Double(k) / 9) : 0.03
    }
    /// Share of devices with a universal-link open; 80% of them at least 7 days after install.
    static let universalLinkShare = 0.15
    /// Probability of a refund for a purchase (in a session at least one day later).
    static let refundShare = 0.07
    /// Sign-up probability of organic devices (links draw theirs from 0.25...0.65).
    static let organicSignUp = 0.3
    /// Purchase probability after sign-up for organic devices (links draw theirs from 0.15...0.5).
    static let organicPurchase = 0.25

    private static func expNeg(_ x: Double) -> Double {
        // exp(-x) by squaring a short Taylor series; exact enough and platform independent.
        var y = x / 64
        var sum = 1.0
        var term = 1.0
        for k in 1...12 {
            term *= -y / Double(k)
            sum += term
        }
        y = sum
        for _ in 0..<6 { y *= y }
        return y
    }
}
