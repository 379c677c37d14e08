import CivilTime

// ISO-8601 parsing and formatting without Foundation.
//
// Accepted: `YYYY-MM-DDTHH:MM:SS[.f{0,9}](Z|±hh:mm|±hhmm|±hh)`; `T` may be `t`, `Z` may be `z`. A
// zone is required (a local time means nothing to a server). Fractions beyond microseconds are
// truncated. Formatted: always UTC with milliseconds, `YYYY-MM-DDTHH:MM:SS.mmmZ`.

extension Timestamp {
    /// Parses an ISO-8601 date-time with a zone (`Z`, `+hh:mm`, `+hhmm`, `+hh`) and 0-9 fraction digits.
    ///
    /// - Parameter bytes: the UTF-8 text, without quotes.
    /// - Returns: nil when the text is not such a date-time or names an impossible date.
    package init?(iso8601 bytes: some Collection<UInt8>) {
        let parsed: Int64?? = bytes.withContiguousStorageIfAvailable { Timestamp.parse($0) }
        if let parsed {
            guard let value = parsed else { return nil }
            self.init(microseconds: value)
        } else {
            guard let value = Array(bytes).withUnsafeBufferPointer({ Timestamp.parse($0) }) else { return nil }
            self.init(microseconds: value)
        }
    }

    /// Parses an ISO-8601 date-time string; see ``init(iso8601:)-(Collection<UInt8>)``.
    package init?(iso8601 text: String) {
        var text = text
        guard let value = text.withUTF8({ Timestamp.parse($0) }) else { return nil }
        self.init(microseconds: value)
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC.
    package var iso8601: String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            writeISO8601(into: buffer.baseAddress!)
        }
    }

    /// Appends `YYYY-MM-DDTHH:MM:SS.mmmZ` to a byte buffer (no quotes).
    package func appendISO8601(to buffer: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { scratch in
            let count = writeISO8601(into: scratch.baseAddress!)
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[0..<count]))
        }
    }

    /// Writes the formatted form and returns its length (24 bytes for years 0...9999).
    private func writeISO8601(into out: UnsafeMutablePointer<UInt8>) -> Int {
        // An instant outside years 0000-9999 (a zone offset at the edge of the range) is written
        // as the nearest end of it. Clamping only the year kept the other fields:
        // 0000-01-01T00:00+01:00 (0001 BC, December 31st 23:00Z) came out as 0000-12-31T23:00Z,
        // a year later.
        let millis = Swift.min(
            Swift.max(Timestamp.floorDiv(microseconds, 1000), Timestamp.formattableMillis.lowerBound),
            Timestamp.formattableMillis.upperBound)
        let days = Timestamp.floorDiv(millis, 86_400_000)
        var msOfDay = millis - days * 86_400_000
        let (year, month, day) = Timestamp.civil(fromDays: days)
        var i = 0
        func put(_ value: Int64, digits: Int) {
            var v = value
            var k = digits - 1
            while k >= 0 {
                out[i + k] = UInt8(truncatingIfNeeded: 48 + v % 10)
                v /= 10
                k -= 1
            }
            i += digits
        }
        func char(_ c: UInt8) {
            out[i] = c
            i += 1
        }
        put(year, digits: 4)
        char(UInt8(ascii: "-"))
        put(month, digits: 2)
        char(UInt8(ascii: "-"))
        put(day, digits: 2)
        char(UInt8(ascii: "T"))
        let hour = msOfDay / 3_600_000
        msOfDay -= hour * 3_600_000
        let minute = msOfDay / 60_000
        msOfDay -= minute * 60_000
        let second = msOfDay / 1000
        let ms = msOfDay - second * 1000
        put(hour, digits: 2)
        char(UInt8(ascii: ":"))
        put(minute, digits: 2)
        char(UInt8(ascii: ":"))
        put(second, digits: 2)
        char(UInt8(ascii: "."))
        put(ms, digits: 3)
        char(UInt8(ascii: "Z"))
        return i
    }

    /// The instants `iso8601` can write, in milliseconds: 0000-01-01T00:00:00.000Z through
    /// 9999-12-31T23:59:59.999Z.
    static let formattableMillis: ClosedRange<Int64> =
        days(year: 0, month: 1, day: 1) * 86_400_000...days(year: 10_000, month: 1, day: 1) * 86_400_000 - 1

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        CivilCalendar.days(year: year, month: month, day: day)
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01.
    static func civil(fromDays value: Int64) -> (year: Int64, month: Int64, day: Int64) {
        CivilCalendar.date(fromDays: value)
    }

    /// The parser proper; returns microseconds or nil.
    static func parse(_ p: UnsafeBufferPointer<UInt8>) -> Int64? {
        let n = p.count
        guard n >= 20 else { return nil }
        @inline(__always) func digit(_ i: Int) -> Int64? {
            let d = p[i] &- 48
            return d < 10 ? Int64(d) : nil
        }
        @inline(__always) func number(_ i: Int, _ count: Int) -> Int64? {
            var v: Int64 = 0
            for k in i..<(i + count) {
                guard let d = digit(k) else { return nil }
                v = v * 10 + d
            }
            return v
        }
        guard let year = number(0, 4), p[4] == UInt8(ascii: "-"),
            let month = number(5, 2), p[7] == UInt8(ascii: "-"),
            let day = number(8, 2), p[10] == UInt8(ascii: "T") || p[10] == UInt8(ascii: "t"),
            let hour = number(11, 2), p[13] == UInt8(ascii: ":"),
            let minute = number(14, 2), p[16] == UInt8(ascii: ":"),
            let second = number(17, 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }
        var i = 19
        var micros: Int64 = 0
        if p[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < n, let d = digit(i) {
                if digits < 6 { micros = micros * 10 + d }
                digits += 1
                i += 1
            }
            guard (1...9).contains(digits) else { return nil }
            var k = min(digits, 6)
            while k < 6 {
                micros *= 10
                k += 1
            }
        }
        guard i < n else { return nil }
        var offsetSeconds: Int64 = 0
        switch p[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = p[i] == UInt8(ascii: "+") ? 1 : -1
            i += 1
            guard n - i >= 2, let oh = number(i, 2), oh <= 23 else { return nil }
            i += 2
            var om: Int64 = 0  // `±hh` alone (Java's `X` pattern writes whole-hour offsets so)
            if i < n {
                if p[i] == UInt8(ascii: ":") { i += 1 }
                guard n - i >= 2, let minutes = number(i, 2), minutes <= 59 else { return nil }
                om = minutes
                i += 2
            }
            offsetSeconds = sign * (oh * 3600 + om * 60)
        default:
            return nil
        }
        guard i == n else { return nil }
        let seconds = days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return (seconds - offsetSeconds) * 1_000_000 + micros
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
