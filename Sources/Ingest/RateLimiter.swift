import Locking

/// A token bucket per app and key kind: `rate` requests per second, up to `burst` at once. Off
/// unless configured.
///
/// Per key kind: the publishable key ships inside every copy of the app, so anyone can spend its
/// bucket; with one bucket per app (until 2026-12-05) that also refused the link service's clicks
/// and the report API, which use the secret key.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }
    private struct Key: Hashable {
        var app: String
        var kind: KeyKind
    }
    private let rate: Double
    private let burst: Double
    private let buckets = Locked<[Key: Bucket]>([:])
    /// Most apps tracked; beyond it the table is cleared (buckets refill to full anyway).
    private let maxApps = 100_000

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(1, burst > 0 ? burst : rate)
    }

    /// The longest `Retry-After` given, in seconds.
    static let longestWait: Double = 86_400

    /// Takes one token from the bucket of `app` and `kind`; returns nil when allowed, else the whole
    /// seconds until a token is free (at most `longestWait`).
    func acquire(app: String, kind: KeyKind, now: ContinuousClock.Instant = .now) -> Int? {
        let key = Key(app: app, kind: kind)
        return buckets.withLock { buckets in
            if buckets.count >= maxApps, buckets[key] == nil { buckets.removeAll(keepingCapacity: true) }
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + seconds * rate)
            bucket.updated = now
            defer { buckets[key] = bucket }
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
