import EventModel
import Postgres

/// Remembers which UTC day partitions this session has already ensured, so `ensure_day_partitions`
/// (sql/001_core.sql) runs only for days not seen before: once a day for the days ahead, and for a
/// late day the first time one arrives. Forgotten on any failure or reconnect.
///
/// Rows of a day without its partition would still land in the default partition; creating the
/// partition first keeps them in their own day, where pruning finds them. Only days inside the
/// `PartitionWindow` of a row's `received_at` are handed here: a wrong device clock's day stays in
/// the default partition, so the partitions are bounded by what the server saw happen.
struct PartitionCache {
    private var ensured = Set<Int64>()
    private var aheadEnsuredOn: Int64?

    /// Ensures yesterday through `days` days ahead, in its own short transaction (one statement),
    /// at most once per UTC day.
    mutating func ensureAhead(_ connection: Connection, days: Int, today: Int64) throws {
        guard aheadEnsuredOn != today else { return }
        let range = (today - 1)...(today + Int64(days))
        try Self.create(from: range.lowerBound, to: range.upperBound, connection)
        ensured.formUnion(range)
        aheadEnsuredOn = today
    }

    /// Ensures the partitions of `days`, in one short transaction of its own.
    mutating func ensure(days: Set<Int64>, _ connection: Connection) throws {
        let missing = days.subtracting(ensured).sorted()
        guard !missing.isEmpty else { return }
        // Contiguous runs, one call each.
        var start = missing[0]
        var previous = missing[0]
        for day in missing.dropFirst() + [Int64.max] {
            if day == previous + 1 {
                previous = day
                continue
            }
            try Self.create(from: start, to: previous, connection)
            start = day
            previous = day
        }
        ensured.formUnion(missing)
    }

    /// Creates the partitions of `[from, to]` under the load lock (waiting for it): attaching a day
    /// while another aggregator's load transaction inserts rows of that day into the default
    /// partition would fail that insert (the default's constraint changes under it).
    private static func create(from: Int64, to: Int64, _ connection: Connection) throws {
        try connection.withTransaction { connection in
            try connection.query(LoadSQL.lock)
            try connection.query(LoadSQL.ensurePartitions(from: iso(from), to: iso(to)))
        }
    }

    /// `YYYY-MM-DD` of a UTC day number.
    static func iso(_ day: Int64) -> String {
        String(Timestamp(microseconds: day * 86_400_000_000).iso8601.prefix(10))
    }
}
