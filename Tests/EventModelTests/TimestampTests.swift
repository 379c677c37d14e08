import Testing

@testable import EventModel

@Suite struct TimestampTests {
    static let parsed: [(String, String)] = [
        ("2026-06-01T10:20:30.123Z", "2026-06-01T10:20:30.123Z"),
        ("2026-06-01T10:20:30Z", "2026-06-01T10:20:30.000Z"),
        ("2026-06-01T10:20:30.1Z", "2026-06-01T10:20:30.100Z"),
        ("2026-06-01T10:20:30.123456789Z", "2026-06-01T10:20:30.123Z"),
        ("2026-06-01T12:20:30.123+02:00", "2026-06-01T10:20:30.123Z"),
        ("2026-06-01T05:50:30.123-0430", "2026-06-01T10:20:30.123Z"),
        ("2026-06-01T12:20:30.123+02", "2026-06-01T10:20:30.123Z"),
        ("2026-06-01T07:20:30-03", "2026-06-01T10:20:30.000Z"),
        ("2026-06-01t10:20:30.123z", "2026-06-01T10:20:30.123Z"),
        ("2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00.000Z"),
        ("2024-02-29T23:59:59.999Z", "2024-02-29T23:59:59.999Z"),
        ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"),
        ("1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"),
        ("2000-03-01T00:00:00Z", "2000-03-01T00:00:00.000Z"),
    ]

    @Test("ISO-8601 timestamps with Z, offsets and 0-9 fraction digits parse to the same instant", arguments: parsed)
    func parses(_ text: String, _ formatted: String) throws {
        let time = try #require(Timestamp(iso8601: text))
        #expect(time.iso8601 == formatted)
        #expect(Timestamp(iso8601: Array(text.utf8)) == time)
        #expect(
            Timestamp(iso8601: formatted)?.microseconds == time.microseconds / 1000 * 1000
                - (time.microseconds % 1000 < 0 ? 1000 : 0))
    }

    static let refused = [
        "", "2026-06-01", "2026-06-01T10:20:30", "2026-06-01T10:20:30.Z", "2026-06-01T10:20:30.1234567890Z",
        "2026-13-01T10:20:30Z", "2026-02-29T10:20:30Z", "2026-06-31T10:20:30Z", "2026-06-01T24:00:00Z",
        "2026-06-01T10:60:00Z", "2026-06-01T10:20:60Z", "2026-06-01 10:20:30Z", "2026-06-01T10:20:30+2:00",
        "2026-06-01T10:20:30+02:0", "2026-06-01T10:20:30Z ", "26-06-01T10:20:30Z", "2026-06-01T10:20:30.123ZZ",
        "２026-06-01T10:20:30Z", "2026-06-01T10:20:30+02:", "2026-06-01T10:20:30+020", "2026-06-01T10:20:30+2",
        "2026-06-01T10:20:30+24", "2026-06-01T10:20:30+", "2026-06-01T10:20:30+02:60",
    ]

    @Test("malformed or impossible timestamps are refused", arguments: refused)
    func refuses(_ text: String) {
        #expect(Timestamp(iso8601: text) == nil)
    }

    @Test("microseconds survive parsing and the epoch is zero")
    func exactValues() throws {
        #expect(Timestamp(iso8601: "1970-01-01T00:00:00Z")?.microseconds == 0)
        #expect(Timestamp(iso8601: "1970-01-01T00:00:01.000001Z")?.microseconds == 1_000_001)
        #expect(Timestamp(iso8601: "1969-12-31T23:59:59.5Z")?.microseconds == -500_000)
        #expect(Timestamp(iso8601: "2026-06-01T10:20:30.123Z")?.microseconds == 1_780_309_230_123_000)
    }

    @Test("every day of 1999-2101 formats and parses back to itself")
    func calendarRoundTrip() throws {
        let start = try #require(Timestamp(iso8601: "1999-01-01T12:34:56.789Z"))
        for day in 0..<(103 * 366) {
            let time = Timestamp(microseconds: start.microseconds + Int64(day) * 86_400_000_000)
            #expect(Timestamp(iso8601: time.iso8601) == time)
        }
    }

    @Test("an instant outside years 0000-9999 is written as the nearest end of the range, not a year off")
    func edgesOfTheRange() throws {
        // 0000-01-01T00:00+01:00 is 23:00Z on the last day of the year before 0000.
        #expect(try #require(Timestamp(iso8601: "0000-01-01T00:00:00+01:00")).iso8601 == "0000-01-01T00:00:00.000Z")
        #expect(try #require(Timestamp(iso8601: "9999-12-31T23:30:00-01:00")).iso8601 == "9999-12-31T23:59:59.999Z")
        // Inside the range nothing moves, the first and last millisecond included.
        for text in ["0000-01-01T00:00:00.000Z", "0000-06-01T12:00:00.000Z", "9999-12-31T23:59:59.999Z"] {
            #expect(try #require(Timestamp(iso8601: text)).iso8601 == text)
        }
    }

    @Test("now is after 2025")
    func now() {
        #expect(Timestamp.now() > Timestamp(iso8601: "2025-01-01T00:00:00Z")!)
    }
}
