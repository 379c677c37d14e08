import EventModel
import Postgres

/// Remembers which UTC day partitions this session has already ensured, so `ensure_day_partitions`
/// (sql/001_core.sql) runs only for days not seen before: once a day for the days ahead, and for a
/// late day the first time one arrives. What was ensured is forgotten on any failure or reconnect
/// (`reset()`); the days still to create (`pending`) are not.
///
/// Rows of a day without its partition would still land in the default partition; creating the
/// partition first keeps them in their own day, where pruning finds them. Only days inside the
/// `PartitionWindow` of a row's `received_at` are handed here: a wrong device clock's day stays in
/// the default partition, so the partitions are bounded by what the server saw happen.
///
/// A day whose creation fails (a lost connection, a lock timeout, a name taken by another object)
/// stays in `pending` and is tried again by every later `ensure`, which the loader calls after each
/// cycle while anything is pending, whether or not that cycle brought rows of the day. Until
/// 2026-12-02 a failed day was simply not marked ensured: it was tried again only when a later cycle
/// brought another row of that very day, so its rows could stay in the default partition for good.
/// A process restart still forgets `pending` (the rows stay correct in the default partition; the
/// next row of that day, or `ensure_day_partitions` by hand, creates it).
struct PartitionCache {
    private var ensured = Set<Int64>()
    private var aheadEnsuredOn: Int64?
    /// Days asked for whose partitions are not created yet; tried again by every `ensure`.
    private(set) var pending = Set<Int64>()

    /// Forgets what was ensured (after a failure or on a new connection); keeps `pending`.
    mutating func reset() {
        ensured = []
        aheadEnsuredOn = nil
    }

    /// Ensures yesterday through `days` days ahead, in its own short transaction (one statement),
    /// at most once per UTC day.
    mutating func ensureAhead(_ connection: Connection, days: Int, today: Int64) throws {
        guard aheadEnsuredOn != today else { return }
        let range = (today - 1)...(today + Int64(days))
        try Self.create(from: range.lowerBound, to: range.upperBound, connection)
        ensured.formUnion(range)
        pending.subtract(range)
        aheadEnsuredOn = today
    }

    /// Ensures the partitions of `days` and of every day still pending, one short transaction per
    /// contiguous run of days; a run that fails is tried again day by day, so one day that cannot be
    /// created does not hold back its neighbours. The days that failed stay pending.
    /// - Throws: the first error, after every run was tried.
    mutating func ensure(days: Set<Int64>, _ connection: Connection) throws {
        pending.formUnion(days.subtracting(ensured))
        let missing = pending.sorted()
        guard !missing.isEmpty else { return }
        var firstError: (any Error)?
        func attempt(_ run: ClosedRange<Int64>) -> Bool {
            do {
                try Self.create(from: run.lowerBound, to: run.upperBound, connection)
                ensured.formUnion(run)
                pending.subtract(run)
                return true
            } catch {
                if firstError == nil { firstError = error }
                return false
            }
        }
        // Contiguous runs, one call each.
        var start = missing[0]
        var previous = missing[0]
        for day in missing.dropFirst() + [Int64.max] {
            if day == previous + 1 {
                previous = day
                continue
            }
            if !attempt(start...previous), start < previous {
                for single in start...previous { _ = attempt(single...single) }
            }
            start = day
            previous = day
        }
        if let firstError { throw firstError }
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
