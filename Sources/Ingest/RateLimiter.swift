import Locking

/// A token bucket per app: `rate` requests per second, up to `burst` at once. Off unless configured.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }
    private let rate: Double
    private let burst: Double
    private let buckets = Locked<[String: Bucket]>([:])
    /// Most apps tracked; beyond it the table is cleared (buckets refill to full anyway).
    private let maxApps = 100_000

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(1, burst > 0 ? burst : rate)
    }

    /// The longest `Retry-After` given, in seconds.
    static let longestWait: Double = 86_400

    /// Takes one token for `app`; returns nil when allowed, else the whole seconds until a token is
    /// free (at most `longestWait`).
    func acquire(app: String, now: ContinuousClock.Instant = .now) -> Int? {
        buckets.withLock { buckets in
            if buckets.count >= maxApps, buckets[app] == nil { buckets.removeAll(keepingCapacity: true) }
            var bucket = buckets[app] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + seconds * rate)
            bucket.updated = now
            defer { buckets[app] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            // At most a day: a tiny rate (`--rate-limit 1e-20`) made the wait too large for an
            // Int, and converting it trapped, ending the process at an app's second request.
            return Int(min(Self.longestWait, max(1, ((1 - bucket.tokens) / rate).rounded(.up))))
        }
    }
}
