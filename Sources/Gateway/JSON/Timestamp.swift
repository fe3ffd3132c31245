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

    /// A moment given in Unix milliseconds, in the same form.
    static func rfc3339(milliseconds: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(milliseconds: milliseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends a moment given in Unix milliseconds, in the same form, digit by digit.
    static func append(milliseconds: Int64, to bytes: inout [UInt8]) {
        var t = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&t, &parts)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var v = max(0, value)
            while divisor > 0 {
                bytes.append(UInt8(48 + (v / divisor) % 10))
                v %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        digits(Int(milliseconds % 1000), 3)
        bytes.append(UInt8(ascii: "Z"))
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
                c = (second, "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
                     + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))")
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
