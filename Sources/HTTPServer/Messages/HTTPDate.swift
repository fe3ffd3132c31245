import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The `Date` header value (IMF-fixdate, RFC 9110 §5.6.7), formatted at most once a second.
/// Each connection keeps its own, so no lock is shared between connections.
struct HTTPDate {
    private var second = -1
    private var text = ""

    mutating func now() -> String {
        let current = time(nil)
        if current != second {
            second = current
            text = Self.format(current)
        }
        return text
    }

    static func format(_ seconds: Int) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

/// An IMF-fixdate (RFC 9110 §5.6.7) for `seconds` since 1970, e.g. for `Upload-Expires`.
public func httpDate(secondsSince1970 seconds: Int) -> String {
    HTTPDate.format(seconds)
}
