import Foundation

/// When to try a request again: exponential backoff with full jitter ("Exponential Backoff And
/// Jitter", AWS Architecture Blog, 2015): attempt `n` waits a random time in
/// `0...min(cap, base · 2ⁿ)`; a server's `Retry-After` is honoured instead (up to `maxRetryAfter`).
///
/// Pure: the random source is a parameter, so tests pin it.
public struct RetryPolicy: Sendable, Hashable {
    /// Retries after the first try; 0 tries once.
    public var limit: Int
    /// The first attempt's ceiling, seconds.
    public var base: Double
    /// The largest ceiling, seconds.
    public var cap: Double
    /// The longest `Retry-After` obeyed, seconds.
    public var maxRetryAfter: Double

    /// A policy; the defaults wait up to 0.5 s, 1 s, 2 s… and never more than 30 s.
    public init(limit: Int = 3, base: Double = 0.5, cap: Double = 30, maxRetryAfter: Double = 300) {
        self.limit = max(0, limit)
        self.base = base
        self.cap = cap
        self.maxRetryAfter = maxRetryAfter
    }

    /// The wait before retry number `attempt` (0 for the first retry), or `nil` once the limit is
    /// reached. `unit` is a random number in `0..<1`.
    public func delay(attempt: Int, retryAfter: Double? = nil, unit: Double) -> Double? {
        guard attempt < limit else { return nil }
        if let retryAfter { return min(max(0, retryAfter), maxRetryAfter) }
        let ceiling = min(cap, base * pow(2, Double(min(attempt, 30))))
        return ceiling * min(max(unit, 0), 1)
    }

    /// `Retry-After` as RFC 9110 §10.2.3 allows: delay seconds or an HTTP date.
    public static func retryAfterSeconds(_ value: String?, now: Date = Date()) -> Double? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Double(value) { return max(0, seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
