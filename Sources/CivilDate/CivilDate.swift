/// Dates of the proleptic Gregorian calendar counted in days since 1970-01-01, both ways, by
/// arithmetic alone (H. Hinnant's `civil_from_days` and `days_from_civil`): no `gmtime_r`,
/// which takes glibc's time zone lock, and no Foundation calendar. The one place the server's
/// timestamps (SigV4's, the API's) turn days into years, months and days.
public enum CivilDate {
    /// Year, month (1–12) and day (1–31) of the day `days` after 1970-01-01 (negative before).
    public static func fromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to `year`-`month`-`day` (month 1–12), negative before it.
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Days and the second of the day of a moment `seconds` after 1970-01-01T00:00:00Z
    /// (floored: a moment before 1970 belongs to the day that began before it).
    public static func split(seconds: Int) -> (days: Int, secondOfDay: Int) {
        let (q, r) = seconds.quotientAndRemainder(dividingBy: 86_400)
        return r < 0 ? (q - 1, r + 86_400) : (q, r)
    }
}
