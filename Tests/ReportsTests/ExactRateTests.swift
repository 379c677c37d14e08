import Postgres
import Reports
import TestSupport
import Testing

/// The reports' rates computed from their integers (`ExactRate`) against what PostgreSQL prints for
/// `round(a::numeric / b, 6)`, the expression of the views' rate columns, over every pair up to 400,
/// rates over 1, the half steps, the fast path's edges, negative values, pairs where PostgreSQL's two
/// roundings differ from one, and pseudo-random pairs up to the limit.
@Suite struct ExactRateTests {
    @Test("every rate is the text PostgreSQL's round(a::numeric / b, 6) prints")
    func sameAsPostgreSQL() throws {
        let database = try Database()
        defer { database.close() }
        var pairs: [(Int, Int)] = [
            (1, 2_000_000), (1, 2_000_001), (3, 2_000_000), (1, 1_600_000), (1, 3_200_000), (5, 8), (7, 16),
            (1, 9_999_999_999), (4_999_999_999, 9_999_999_998), (9_999_999_998, 9_999_999_999),
            (9_999_999_999, 9_999_999_999), (9_999_999_999, 10_000_000_000), (1, 10_000_000_000),
            (5_000_000_001, 10_000_000_000), (999_999_999_999, 1), (999_999_999_999, 999_999_999_998),
            (123_456_789_012, 7), (1, 999_999_999_999), (499_999, 999_999_999_999), (10_000, 1), (9_999, 1),
            (12_345, 7), (100_000_000, 3), (-1, 3), (1, -3), (-2, -3), (0, -5), (-1, 2_000_000), (-1, 2_000_001),
            (-999_999_999_999, 7), (3, -2),
            // Just under a half step, where PostgreSQL's first rounding (16 decimals) lands on it and its
            // second rounds up: 2.000001 and 3.000001, where one rounding of the exact quotient gives
            // 2.000000 and 3.000000.
            (200_000_050_002, 100_000_000_001), (300_042_050_010, 100_014_000_001),
        ]
        var random = SeededGenerator(state: 2026_12_03)
        for _ in 0..<20_000 {
            let denominator = random.below(ExactRate.limit - 1) + 1
            pairs.append((random.below(ExactRate.limit), denominator))
            pairs.append((random.below(denominator + 1), denominator))
            let small = random.below(100_000) + 1
            pairs.append((random.below(small + 1), small))
        }
        let numerators = "{" + pairs.map { String($0.0) }.joined(separator: ",") + "}"
        let denominators = "{" + pairs.map { String($0.1) }.joined(separator: ",") + "}"
        let rows = try database.connection.query(
            """
            SELECT a, b, round(a::numeric / b, 6)::text AS rate FROM (
                SELECT a, b FROM generate_series(1, 400) AS b, generate_series(0, b) AS a
                UNION ALL
                SELECT a, b FROM generate_series(1, 40) AS b, generate_series(b + 1, 30 * b) AS a
                UNION ALL
                SELECT * FROM unnest(\(numerators)::bigint[], \(denominators)::bigint[])
            ) AS pairs (a, b)
            """)
        var compared = 0
        var differing: [String] = []
        for row in rows {
            let a = try row["a", as: Int.self], b = try row["b", as: Int.self]
            let expected = try row["rate", as: String.self]
            let rate = ExactRate.rounded6(a, over: b)
            compared += 1
            if rate != expected, differing.count < 10 { differing.append("\(a)/\(b): \(rate ?? "nil") != \(expected)") }
        }
        #expect(compared > 120_000)
        #expect(differing.isEmpty, "\(differing)")
    }

    @Test(
        "no rate over zero, or past the limit",
        arguments: [(1, 0), (0, 0), (ExactRate.limit, 3), (3, ExactRate.limit), (-ExactRate.limit, 1)] as [(Int, Int)])
    func none(numerator: Int, denominator: Int) {
        #expect(ExactRate.rounded6(numerator, over: denominator) == nil)
    }
}
