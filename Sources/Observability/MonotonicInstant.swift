import Glibc

/// A reading of the monotonic clock (`CLOCK_MONOTONIC`, never stepped) in nanoseconds, for
/// latencies measured on the request path.
///
/// Not `ContinuousClock.Instant`: that type is resilient (its layout is private to the runtime),
/// so every struct holding one was copied and destroyed through run-time value witnesses
/// (~200 instructions per copy of a queued append's callback), and the elapsed time was 128-bit
/// `Duration` arithmetic (~250 instructions per observation). Here a copy is a word and the
/// elapsed time an integer subtraction (docs/ingest-performance.md, "Instructions per request").
package struct MonotonicInstant: Sendable, Comparable {
    /// Nanoseconds since an arbitrary fixed point (the system's boot, on Linux).
    package let nanoseconds: UInt64

    /// The instant `nanoseconds` after the clock's origin.
    package init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// Now.
    package static var now: MonotonicInstant {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return MonotonicInstant(nanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
    }

    /// Nanoseconds from this instant to now (0 if the clock reads earlier, which it cannot).
    package var elapsedNanoseconds: UInt64 {
        let now = MonotonicInstant.now.nanoseconds
        return now >= nanoseconds ? now - nanoseconds : 0
    }

    /// Seconds from this instant to now.
    package var elapsedSeconds: Double { Double(elapsedNanoseconds) / 1e9 }

    package static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
