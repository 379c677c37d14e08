import CivilTime
import EventModel

/// Which UTC days earn a day partition of their own: a row's day counts only when it is plausible
/// relative to when the server received the row, `[day(received_at) - maxLagDays, day(received_at) + 1]`.
///
/// Why: a single SDK event's time is the device's clock, and devices with reset or wrong clocks
/// (1970-01-01, 2000-01-01, firmware dates) are common. Creating a partition for every day a client
/// claims left thousands of one-row partitions in every raw table. Rows outside the window stay in
/// the default partition (loaded, counted and reported all the same; only pruning differs).
/// The upper edge is one day: ingest clamps event times more than 24 h ahead of `received_at` to
/// `received_at` (`ClockRule`), so nothing legitimate lies further ahead.
///
/// The rule reads each row's own `received_at`, never the aggregator's clock, so a replay of old
/// segments into a rebuilt database creates the same partitions the original load did.
struct PartitionWindow: Sendable {
    /// Days before the day of `received_at` that still get a partition.
    let maxLagDays: Int64

    init(maxLagDays: Int) {
        self.maxLagDays = Int64(maxLagDays)
    }

    /// True when `day` (UTC days since 1970-01-01) may have a partition created for a row received on
    /// `receivedDay`.
    func contains(day: Int64, receivedDay: Int64) -> Bool {
        day >= receivedDay - maxLagDays && day <= receivedDay + 1 && Self.nameableDays.contains(day)
    }

    /// The days a partition name `<table>_pYYYYMMDD` (sql/001's `ensure_day_partitions`) can name:
    /// AD 0001-01-01 through 9999-12-31. A row of year 0000 (1 BC to PostgreSQL) stays in the default
    /// partition, as any row outside the window does, even when it was received then (only a forged or
    /// test envelope is).
    static let nameableDays =
        CivilCalendar.days(year: 1, month: 1, day: 1)...CivilCalendar.days(year: 9999, month: 12, day: 31)

    /// True when a row of time `time`, received at `receivedAt`, may have its day's partition created.
    func contains(time: Timestamp, receivedAt: Timestamp) -> Bool {
        contains(day: StagingBatch.day(of: time), receivedDay: StagingBatch.day(of: receivedAt))
    }
}
