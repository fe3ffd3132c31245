import CivilDate
import Foundation
import Striped

#if canImport(Glibc)
    import Glibc
#endif

/// UTC time as `2026-11-29T22:50:01.123Z`, formatted at most once per second plus milliseconds.
enum Timestamp {
    private static let cache = Striped<(Int, String)> { (-1, "") }

    static func now() -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An IMF-fixdate (RFC 9110 §5.6.7, as S3 sends `Last-Modified`) in this form; nil when
    /// it is not one.
    static func rfc3339(httpDate text: String) -> String? {
        // "Tue, 01 Dec 2026 18:00:00 GMT": fixed positions.
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == UInt8(ascii: ","), text.hasSuffix(" GMT") else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for i in range {
                guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return value
        }
        guard let day = number(5..<7), let month = months.firstIndex(of: String(decoding: b[8..<11], as: UTF8.self)),
            let year = number(12..<16), let hour = number(17..<19), let minute = number(20..<22), let second = number(23..<25),
            (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        let days = CivilDate.days(year: year, month: month + 1, day: day)
        return rfc3339(milliseconds: Int64(((days * 24 + hour) * 60 + minute) * 60 + second) * 1000)
    }

    /// An RFC 3339 moment as S3 lists it (`2026-12-01T18:30:02Z`, `…02.000Z`, an offset or
    /// more fractional digits), in this form: UTC, milliseconds. Nil when it is not one.
    static func rfc3339(normalizing text: String) -> String? {
        let b = Array(text.utf8)
        // The usual spellings, kept without a date parser: whole seconds, or milliseconds, in UTC.
        if b.count == 20, b[19] == UInt8(ascii: "Z"), b[10] == UInt8(ascii: "T") { return String(text.dropLast()) + ".000Z" }
        if b.count == 24, b[23] == UInt8(ascii: "Z"), b[19] == UInt8(ascii: "."), b[10] == UInt8(ascii: "T") { return text }
        guard let date = RFC3339.date(from: text) else { return nil }
        return rfc3339(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// A moment given in Unix milliseconds, in the same form.
    static func rfc3339(milliseconds: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(milliseconds: milliseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends a moment given in Unix milliseconds, in the same form: worked out by arithmetic
    /// (no `gmtime_r`, which takes glibc's time zone lock on every call) into 24 bytes on the
    /// stack, appended at once.
    static func append(milliseconds: Int64, to bytes: inout [UInt8]) {
        // Floored division: a moment before 1970 belongs to the second that began before it
        // (no subtraction that could overflow at the ends of Int).
        let (q, r) = Int(milliseconds).quotientAndRemainder(dividingBy: 1000)
        let seconds = r < 0 ? q - 1 : q, millisecond = r < 0 ? r + 1000 : r
        let (days, secondOfDay) = CivilDate.split(seconds: seconds)
        let (year, month, day) = CivilDate.fromDays(days)
        var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { out in
            func put(_ value: Int, _ width: Int, at offset: Int) {
                var v = max(0, value)
                for i in stride(from: offset + width - 1, through: offset, by: -1) {
                    out[i] = UInt8(48 + v % 10)
                    v /= 10
                }
            }
            put(year, 4, at: 0)
            out[4] = UInt8(ascii: "-")
            put(month, 2, at: 5)
            out[7] = UInt8(ascii: "-")
            put(day, 2, at: 8)
            out[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 11)
            out[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, 2, at: 14)
            out[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, 2, at: 17)
            out[19] = UInt8(ascii: ".")
            put(millisecond, 3, at: 20)
            out[23] = UInt8(ascii: "Z")
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: out[..<24]))
        }
    }

    /// Appends the same text as `now()` to `bytes`.
    static func append(to bytes: inout [UInt8]) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let second = Int(ts.tv_sec)
        var prefix = cache.withLocalLock { c -> String in
            if c.0 != second {
                var t = time_t(second)
                var parts = tm()
                gmtime_r(&t, &parts)
                func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
                c = (
                    second,
                    "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
                        + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
                )
            }
            return c.1
        }
        prefix.withUTF8 { bytes.append(contentsOf: $0) }
        let ms = Int(ts.tv_nsec) / 1_000_000
        bytes.append(UInt8(ascii: "."))
        bytes.append(UInt8(48 + ms / 100))
        bytes.append(UInt8(48 + ms / 10 % 10))
        bytes.append(UInt8(48 + ms % 10))
        bytes.append(UInt8(ascii: "Z"))
    }
}
