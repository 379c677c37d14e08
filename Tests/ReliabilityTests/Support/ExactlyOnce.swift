import Postgres

/// The verdict on one app's rows after a chaos run.
struct ExactlyOnceReport: CustomStringConvertible {
    var acknowledged: Int
    var loaded: Int
    /// Acknowledged ids with no row.
    var lost: [String]
    /// Ids with more than one row.
    var duplicated: [String]
    /// Rows whose id was never sent (should be impossible).
    var unknown: [String]

    var isExactlyOnce: Bool { lost.isEmpty && duplicated.isEmpty && unknown.isEmpty }

    var description: String {
        "acknowledged \(acknowledged), loaded \(loaded), lost \(lost.count) \(lost.prefix(5)), "
            + "duplicated \(duplicated.count) \(duplicated.prefix(5)), unknown \(unknown.count) \(unknown.prefix(5))"
    }

    /// Compares the `events` rows of `app` with what the client sent and had acknowledged.
    static func check(connection: Connection, app: String, tally: LoadClient.Tally) throws -> ExactlyOnceReport {
        let rows = try connection.query(
            "SELECT event_id, count(*) AS n FROM events WHERE app_id = \(app) GROUP BY event_id")
        var counts: [String: Int] = [:]
        for row in rows { counts[try row["event_id", as: String.self]] = try row["n", as: Int.self] }
        return ExactlyOnceReport(
            acknowledged: tally.acknowledged.count, loaded: counts.count,
            lost: tally.acknowledged.filter { counts[$0] == nil }.sorted(),
            duplicated: counts.filter { $0.value > 1 }.map(\.key).sorted(),
            unknown: counts.keys.filter { !tally.sent.contains($0) }.sorted())
    }
}
