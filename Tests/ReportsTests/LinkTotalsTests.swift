import Reports
import Testing

/// The arithmetic of the per-link totals (`--by link`): exact decimal sums as PostgreSQL's
/// `numeric` adds, and install rates as `round(matched::numeric / clicks, 6)` prints them.
/// `ReportTruthTests` checks whole totals reports against the views' SQL sums.
@Suite struct LinkTotalsTests {
    @Test(
        "revenue adds up exactly, with the larger scale, printed as numeric prints it",
        arguments: [
            ("0.1", "0.20", "0.30"), ("-5.00", "5", "0.00"), ("12", "-0.5", "11.5"), ("-0.05", "0", "-0.05"),
            ("29.99", "29.99", "59.98"), ("0", "0", "0"), ("-1", "-2.000", "-3.000"),
            ("99999999999999.999999", "0.000001", "100000000000000.000000"), ("0.3", "-0.30", "0.00"),
        ])
    func sums(left: String, right: String, sum: String) throws {
        let a = try #require(ExactDecimal(left)), b = try #require(ExactDecimal(right))
        #expect((a + b).text == sum)
        #expect((b + a).text == sum)
        #expect(ExactDecimal(sum)?.text == sum, "a sum reads back as itself")
    }

    @Test(
        "anything but [-]digits[.digits] is not a decimal",
        arguments: ["", "-", ".5", "5.", "1e3", "NaN", "1.2.3", " 1", "+1", "--1"])
    func notDecimals(text: String) {
        #expect(ExactDecimal(text) == nil)
    }

    @Test(
        "amounts of any size and scale add up exactly, as numeric does (not only 38 digits and 30 decimals)",
        arguments: [
            (
                "9" + String(repeating: "0", count: 37), "9" + String(repeating: "0", count: 37),
                "18" + String(repeating: "0", count: 37)
            ),
            ("0." + String(repeating: "0", count: 30) + "1", "1", "1." + String(repeating: "0", count: 30) + "1"),
            ("1" + String(repeating: "0", count: 40), "-0.5", String(repeating: "9", count: 40) + ".5"),
            ("-" + String(repeating: "9", count: 50), "1", "-9" + String(repeating: "9", count: 48) + "8"),
            ("123456789.123456789", "-123456789.123456789", "0.000000000"),
            ("-1000000000", "999999999.9999999999", "-0.0000000001"),
        ])
    func largeSums(left: String, right: String, sum: String) throws {
        let a = try #require(ExactDecimal(left)), b = try #require(ExactDecimal(right))
        #expect((a + b).text == sum)
        #expect((b + a).text == sum)
        #expect(ExactDecimal(sum)?.text == sum, "a sum reads back as itself")
    }

    @Test(
        "install rate: matched / clicks rounded half away from zero to 6 places; none without clicks",
        arguments: [
            (1, 3, "0.333333"), (2, 3, "0.666667"), (1, 8, "0.125000"), (5, 5, "1.000000"), (0, 7, "0.000000"),
            (1, 2_000_000, "0.000001"), (1, 2_000_001, "0.000000"), (3, 2, "1.500000"), (7, 0, nil),
        ] as [(Int, Int, String?)])
    func installRate(matched: Int, clicks: Int, rate: String?) {
        #expect(LinkTotalsReport.installRate(matched: matched, clicks: clicks) == rate)
    }
}
