/// A signing instant in the two spellings SigV4 uses: `yyyyMMdd` and `yyyyMMdd'T'HHmmss'Z'`.
public struct SigningTime: Sendable, Equatable {
    public let secondsSince1970: Int
    public let date: String
    public let dateTime: String

    public init(secondsSince1970: Int) {
        self.secondsSince1970 = secondsSince1970
        let days = secondsSince1970 >= 0 ? secondsSince1970 / 86_400 : (secondsSince1970 - 86_399) / 86_400
        let secondOfDay = secondsSince1970 - days * 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        func pad(_ n: Int, _ width: Int) -> String {
            let text = String(n)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        date = pad(year, 4) + pad(month, 2) + pad(day, 2)
        dateTime = date + "T" + pad(secondOfDay / 3600, 2) + pad(secondOfDay / 60 % 60, 2) + pad(secondOfDay % 60, 2) + "Z"
    }

    /// Proleptic Gregorian date from days since 1970-01-01 (H. Hinnant's civil_from_days).
    static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
