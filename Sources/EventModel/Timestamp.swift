#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A point in time: microseconds since 1970-01-01T00:00:00Z.
///
/// Parsing and formatting are hand-written (no `DateFormatter`) because both run once per event.
package struct Timestamp: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Microseconds since the Unix epoch (negative before 1970).
    package var microseconds: Int64

    /// Creates a timestamp from microseconds since the epoch.
    package init(microseconds: Int64) {
        self.microseconds = microseconds
    }

    /// The current wall-clock time.
    package static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(microseconds: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
    }

    /// Orders timestamps by time.
    package static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microseconds < rhs.microseconds
    }

    /// The ISO-8601 form, `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    package var description: String { iso8601 }
}
