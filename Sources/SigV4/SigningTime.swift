/// A signing instant in the two spellings SigV4 uses: `yyyyMMdd` and `yyyyMMdd'T'HHmmss'Z'`.
public struct SigningTime: Sendable, Equatable {
    public let secondsSince1970: Int
    public let date: String
    public let dateTime: String

    /// `2026-11-29T12:30:45Z` (RFC 3339).
    public var iso8601: String { Self.iso8601(secondsSince1970) }

    /// RFC 3339 for a moment given in seconds since 1970, written straight into the string.
    public static func iso8601(_ secondsSince1970: Int) -> String {
        let (year, month, day, secondOfDay) = fields(secondsSince1970)
        return String(unsafeUninitializedCapacity: 20) { buffer in
            func put(_ value: Int, _ width: Int, at offset: Int) {
                var v = value
                for i in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[i] = UInt8(48 + v % 10)
                    v /= 10
                }
            }
            put(year, 4, at: 0); buffer[4] = UInt8(ascii: "-"); put(month, 2, at: 5); buffer[7] = UInt8(ascii: "-")
            put(day, 2, at: 8); buffer[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 11); buffer[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, 2, at: 14); buffer[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, 2, at: 17); buffer[19] = UInt8(ascii: "Z")
            return 20
        }
    }

    /// Year, month, day and second of the day.
    private static func fields(_ secondsSince1970: Int) -> (Int, Int, Int, Int) {
        let days = secondsSince1970 >= 0 ? secondsSince1970 / 86_400 : (secondsSince1970 - 86_399) / 86_400
        let (year, month, day) = civil(fromDays: days)
        return (year, month, day, secondsSince1970 - days * 86_400)
    }

    public init(secondsSince1970: Int) {
        self.secondsSince1970 = secondsSince1970
        let (year, month, day, secondOfDay) = Self.fields(secondsSince1970)
        // Digits written straight into the string: this runs for every signature.
        dateTime = String(unsafeUninitializedCapacity: 16) { buffer in
            func put(_ value: Int, _ width: Int, at offset: Int) {
                var v = value
                for i in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[i] = UInt8(48 + v % 10)
                    v /= 10
                }
            }
            put(year, 4, at: 0); put(month, 2, at: 4); put(day, 2, at: 6)
            buffer[8] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 9); put(secondOfDay / 60 % 60, 2, at: 11); put(secondOfDay % 60, 2, at: 13)
            buffer[15] = UInt8(ascii: "Z")
            return 16
        }
        date = String(dateTime.utf8.prefix(8))!
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
