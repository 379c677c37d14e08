import Foundation
import Locking

/// Paces sending to a rate of events per second, shared by every worker thread.
///
/// Virtual scheduling (GCRA): each `take` reserves the next free slot and the caller sleeps until
/// it, so the long-run rate is exact whatever the request sizes; up to `burst` seconds of unused
/// capacity may be spent at once after an idle period.
final class TokenBucket: Sendable {
    private let rate: Double
    private let burst: Duration
    private let nextFree: Locked<ContinuousClock.Instant>

    /// - Parameters:
    ///   - rate: events per second (> 0).
    ///   - burst: how much idle time may be caught up at once (default 100 ms).
    ///   - start: when the first slot is free (now, unless a test gives the clock).
    init(rate: Double, burst: Duration = .milliseconds(100), start: ContinuousClock.Instant = .now) {
        self.rate = rate
        self.burst = burst
        nextFree = Locked(start)
    }

    /// How long the caller must wait, from `now`, before sending `events` events; reserves them.
    func reserve(_ events: Int, now: ContinuousClock.Instant = .now) -> Duration {
        nextFree.withLock { next in
            let slot = max(next, now - burst)
            next = slot + .nanoseconds(Int64(Double(max(events, 1)) / rate * 1e9))
            return slot > now ? slot - now : .zero
        }
    }

    /// Blocks the calling thread until `events` events may be sent.
    func take(_ events: Int) {
        let wait = reserve(events)
        if wait > .zero { Thread.sleepPrecisely(wait) }
    }
}

extension Thread {
    /// Sleeps the calling thread for `duration` (blocking, not async).
    static func sleepPrecisely(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
    }
}
