/// Day arithmetic of the proleptic Gregorian calendar, shared by every module that turns
/// timestamps into dates without Foundation's calendar on a hot path (ISO-8601 parsing, libpq
/// timestamps, report days, simulated time). Howard Hinnant's `days_from_civil` /
/// `civil_from_days`: exact for every year, negative ones included.
package enum CivilCalendar {
    /// Days since 1970-01-01 of `year`-`month`-`day` (month 1-12; day is not range-checked, so
    /// callers that need validation compare `date(fromDays:)` of the result with their input).
    package static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01.
    package static func date(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
