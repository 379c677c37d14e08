import CivilTime
import Foundation

/// Formats and parses `timestamptz` text without Foundation's formatters (which are slow and
/// locale-sensitive). The connection sets DateStyle to ISO, so output looks like
/// `2026-06-01 10:20:30.123456+00`, or `+05:30` with another session time zone.
enum PostgresTimestamp {
    /// `YYYY-MM-DD HH:MM:SS.ffffff+00` in UTC.
    static func format(_ date: Date) -> String {
        format(microseconds: microseconds(date))
    }

    /// Microseconds since the epoch, rounded to the nearest.
    static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    static func format(microseconds micros: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(29)
        write(microseconds: micros, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `YYYY-MM-DD HH:MM:SS.ffffff+00` (years 0...9999) to `bytes` without allocating strings.
    static func write(microseconds micros: Int64, into bytes: inout [UInt8]) {
        let perDay: Int64 = 86_400_000_000
        var days = micros / perDay
        var rest = micros % perDay
        if rest < 0 {
            rest += perDay
            days -= 1
        }
        let (y, m, d) = civil(fromDays: days)
        let seconds = rest / 1_000_000
        func digits(_ value: Int64, _ width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            var v = value
            while divisor > 0 {
                bytes.append(UInt8(48 + (v / divisor) % 10))
                v %= divisor
                divisor /= 10
            }
        }
        digits(y, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(m, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(d, 2)
        bytes.append(UInt8(ascii: " "))
        digits(seconds / 3600, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(seconds / 60 % 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(seconds % 60, 2)
        bytes.append(UInt8(ascii: "."))
        digits(rest % 1_000_000, 6)
        bytes.append(UInt8(ascii: "+"))
        bytes.append(UInt8(ascii: "0"))
        bytes.append(UInt8(ascii: "0"))
    }

    /// Parses `YYYY-MM-DD[ T]HH:MM:SS[.f+][Z|±HH[:MM[:SS]]]`; no zone means UTC.
    static func parse(_ text: String) -> Date? {
        guard let micros = parseMicroseconds(text) else { return nil }
        return Date(timeIntervalSince1970: Double(micros) / 1_000_000)
    }

    static func parseMicroseconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        var i = 0
        func number(_ width: Int) -> Int64? {
            guard i + width <= b.count else { return nil }
            var v: Int64 = 0
            for k in i..<(i + width) {
                let c = b[k]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            i += width
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = number(4), expect(UInt8(ascii: "-")), let month = number(2),
            expect(UInt8(ascii: "-")), let day = number(2)
        else { return nil }
        guard i < b.count, b[i] == UInt8(ascii: " ") || b[i] == UInt8(ascii: "T") else { return nil }
        i += 1
        guard let hour = number(2), expect(UInt8(ascii: ":")), let minute = number(2),
            expect(UInt8(ascii: ":")), let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction: Int64 = 0
        if expect(UInt8(ascii: ".")) {
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 6 { fraction = fraction * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 6) { fraction *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if i < b.count {
            if b[i] == UInt8(ascii: "Z") {
                i += 1
            } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
                let sign: Int64 = b[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let oh = number(2) else { return nil }
                var om: Int64 = 0
                var os: Int64 = 0
                if expect(UInt8(ascii: ":")) {
                    guard let m = number(2) else { return nil }
                    om = m
                    if expect(UInt8(ascii: ":")) {
                        guard let s = number(2) else { return nil }
                        os = s
                    }
                }
                offsetSeconds = sign * (oh * 3600 + om * 60 + os)
            }
        }
        guard i == b.count else { return nil }  // "BC", "infinity" and the like are refused
        let days = daysFromCivil(year: year, month: month, day: day)
        let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return secs * 1_000_000 + fraction
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        CivilCalendar.days(year: year, month: month, day: day)
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        CivilCalendar.date(fromDays: days)
    }
}
