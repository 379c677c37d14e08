/// A count over a count as PostgreSQL prints `round(numerator::numeric / denominator, 6)`: the
/// reports' rates (`install_rate`, the retention `dN_rate` columns) computed from their two integers,
/// so a report read from packed lines need not ask the server for them. The same text, byte for byte,
/// as the views (`ExactRateTests` checks it against PostgreSQL over ~164,000 pairs).
///
/// PostgreSQL rounds twice: its division `numeric / numeric` first rounds the quotient half away from
/// zero to the scale `select_div_scale` chooses (at least 16 significant digits: 16 decimals for a
/// quotient in [1, 10000), 20 or more below 1), then `round(..., 6)` rounds that. For
/// `0 <= numerator <= denominator < 10^10` that is the same as one rounding of the exact quotient:
/// an integer quotient that is not exactly on a half step of 10^-6 lies at least
/// 1 / (2 * 10^6 * denominator) > 0.5 * 10^-16 from it, farther than the first rounding moves it.
/// So that case (every rate of a real report) takes one 64-bit division, and the rest repeats both
/// roundings with 128-bit integers.
package enum ExactRate {
    /// The limit on either magnitude for the general case (nil beyond it): 128 bits hold the
    /// quotient at PostgreSQL's scale for any pair below it.
    package static let limit = 1_000_000_000_000

    /// `round(numerator::numeric / denominator, 6)::text`; nil when `denominator` is 0 (PostgreSQL
    /// would fail; the views give NULL there) or either magnitude is `limit` or more.
    package static func rounded6(_ numerator: Int, over denominator: Int) -> String? {
        guard denominator != 0 else { return nil }
        if numerator >= 0, numerator <= denominator, denominator < 10_000_000_000 {
            let millionths = (2 * numerator * 1_000_000 + denominator) / (2 * denominator)
            return ExactDecimal(units: Int128(millionths), scale: 6).text
        }
        guard numerator.magnitude < limit, denominator.magnitude < limit else { return nil }
        let a = UInt128(numerator.magnitude)
        let b = UInt128(denominator.magnitude)
        let scale = divisionScale(a, b)
        let quotient = (2 * a * power(scale) + b) / (2 * b)
        let millionths =
            scale >= 6 ? (2 * quotient + power(scale - 6)) / (2 * power(scale - 6)) : quotient * power(6 - scale)
        let negative = (numerator < 0) != (denominator < 0)
        return ExactDecimal(units: negative ? -Int128(millionths) : Int128(millionths), scale: 6).text
    }

    /// PostgreSQL's `select_div_scale` for two integers (scale 0 each), `a` over `b` (`b` > 0): 16
    /// significant digits counted in base-10,000 digits of the quotient's weight.
    private static func divisionScale(_ a: UInt128, _ b: UInt128) -> Int {
        func weightAndFirstDigit(_ value: UInt128) -> (weight: Int, first: UInt128) {
            var weight = 0
            var first = value
            while first >= 10_000 {
                first /= 10_000
                weight += 1
            }
            return (weight, first)
        }
        let (weight1, first1) = a == 0 ? (0, 0) : weightAndFirstDigit(a)
        let (weight2, first2) = weightAndFirstDigit(b)
        var quotientWeight = weight1 - weight2
        if first1 <= first2 { quotientWeight -= 1 }
        return max(16 - quotientWeight * 4, 0)
    }

    private static func power(_ exponent: Int) -> UInt128 {
        var result: UInt128 = 1
        for _ in 0..<exponent { result *= 10 }
        return result
    }
}
