import CivilTime
import Foundation

/// A calendar day (`YYYY-MM-DD`), the unit of every report. Which time zone the day belongs to is
/// the app's reporting time zone; the value itself is zone-free, like PostgreSQL's `date`.
package struct ReportDay: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Days since 1970-01-01 (negative before).
    package let daysSinceEpoch: Int

    /// Makes a day from its number of days since 1970-01-01.
    package init(daysSinceEpoch: Int) { self.daysSinceEpoch = daysSinceEpoch }

    /// 0001-01-01, the first day `init(year:month:day:)` and `init(iso8601:)` make.
    package static let first = ReportDay(year: 1, month: 1, day: 1)!

    /// Today in UTC, by this machine's clock.
    package static var todayUTC: ReportDay {
        ReportDay(daysSinceEpoch: Int((Date().timeIntervalSince1970 / 86_400).rounded(.down)))
    }

    /// Makes a day from a Gregorian year, month (1-12) and day of month; nil when invalid.
    package init?(year: Int, month: Int, day: Int) {
        guard (1...12).contains(month), (1...31).contains(day), (1...9999).contains(year) else { return nil }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        guard Self.civil(fromDays: days) == (year, month, day) else { return nil }
        self.daysSinceEpoch = days
    }

    /// Parses exactly `YYYY-MM-DD`; nil for anything else.
    package init?(iso8601 text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// The Gregorian year, month and day of month.
    package var components: (year: Int, month: Int, day: Int) { Self.civil(fromDays: daysSinceEpoch) }

    /// `YYYY-MM-DD`.
    package var iso8601: String {
        let (year, month, day) = components
        if (0...9999).contains(year) {
            // Ten ASCII digits and dashes written in place: reports format one per row (~140k in a
            // 30-day per-link report at 1,000 links), where interpolation with padding showed up.
            return String(unsafeUninitializedCapacity: 10) { out in
                func digits(_ value: Int, _ count: Int, at start: Int) {
                    var value = value
                    for index in stride(from: start + count - 1, through: start, by: -1) {
                        out[index] = UInt8(ascii: "0") + UInt8(value % 10)
                        value /= 10
                    }
                }
                digits(year, 4, at: 0)
                out[4] = UInt8(ascii: "-")
                digits(month, 2, at: 5)
                out[7] = UInt8(ascii: "-")
                digits(day, 2, at: 8)
                return 10
            }
        }
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    package var description: String { iso8601 }

    /// The day `count` days later (earlier when negative).
    package func adding(days count: Int) -> ReportDay { ReportDay(daysSinceEpoch: daysSinceEpoch + count) }

    /// Days from `self` to `other` (positive when `other` is later).
    package func days(to other: ReportDay) -> Int { other.daysSinceEpoch - daysSinceEpoch }

    package static func < (lhs: ReportDay, rhs: ReportDay) -> Bool { lhs.daysSinceEpoch < rhs.daysSinceEpoch }

    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        Int(CivilCalendar.days(year: Int64(year), month: Int64(month), day: Int64(day)))
    }

    private static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let date = CivilCalendar.date(fromDays: Int64(days))
        return (Int(date.year), Int(date.month), Int(date.day))
    }
}
