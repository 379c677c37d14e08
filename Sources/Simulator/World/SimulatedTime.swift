import CivilTime

/// Times in the simulator: milliseconds since the Unix epoch, UTC (`Int64`).
///
/// Every generated event time is a whole second, so durations, medians and day boundaries in the
/// truth are exact. Formatting is done here, without Foundation, so output bytes never depend on
/// a locale or a Foundation version.
package enum SimulatedTime {
    /// Milliseconds in one second.
    package static let second: Int64 = 1000
    /// Milliseconds in one minute.
    package static let minute: Int64 = 60_000
    /// Milliseconds in one hour.
    package static let hour: Int64 = 3_600_000
    /// Milliseconds in one day.
    package static let day: Int64 = 86_400_000

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a millisecond time (always 24 bytes for years 1000-9999).
    package static func iso8601(_ milliseconds: Int64) -> String {
        let days = floorDiv(milliseconds, day)
        let rest = milliseconds - days * day
        let (y, m, d) = civil(fromDays: days)
        let h = rest / hour
        let mi = (rest % hour) / minute
        let s = (rest % minute) / second
        let ms = rest % second
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(ms, 3))Z"
    }

    /// `YYYY-MM-DD` of the UTC day with the given index (days since 1970-01-01).
    package static func dayString(_ dayIndex: Int64) -> String {
        let (y, m, d) = civil(fromDays: dayIndex)
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))"
    }

    /// The UTC day index (days since 1970-01-01) of a millisecond time.
    package static func dayIndex(_ milliseconds: Int64) -> Int64 { floorDiv(milliseconds, day) }

    /// Parses `YYYY-MM-DD` into the millisecond time of that day's UTC midnight; nil if malformed.
    package static func parseDay(_ text: String) -> Int64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let y = Int64(parts[0]), let m = Int64(parts[1]), let d = Int64(parts[2]),
            (1...12).contains(m), (1...31).contains(d)
        else { return nil }
        let days = days(fromCivil: y, m, d)
        guard civil(fromDays: days) == (y, m, d) else { return nil }
        return days * day
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private static func days(fromCivil year: Int64, _ month: Int64, _ dayOfMonth: Int64) -> Int64 {
        CivilCalendar.days(year: year, month: month, day: dayOfMonth)
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        CivilCalendar.date(fromDays: days)
    }
}
