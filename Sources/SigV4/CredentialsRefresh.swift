/// When temporary credentials are fetched again, and what a failed fetch changes: a pure state
/// machine over whole seconds since 1970, fed by the refresher's events (`fetched`, `failed`)
/// and asked what it holds (`current`, `isUsable`). No I/O and no clock of its own, so every
/// schedule is tested with plain numbers.
///
/// The rules:
/// - credentials without an expiration (long-lived keys) are never fetched again;
/// - temporary ones are fetched again ahead of their end by the lesser of 5 minutes and half
///   their lifetime: an hour's credentials after 55 minutes, 2 minutes' after 1, so a refresh
///   that fails has time to be retried before they end;
/// - a failed fetch keeps the last good credentials in use and is retried with backoff (1 s,
///   2 s, 4 s … at most 30 s, and never later than a quarter of what is left of the current
///   credentials' lifetime, but at least 1 s);
/// - fetched credentials that have already ended count as a failure.
public struct CredentialsRefresh: Sendable, Equatable {
    /// The credentials in use: the last good ones.
    public private(set) var current: Credentials?
    /// Fetches that failed since the last good one.
    public private(set) var failures = 0
    /// When to fetch next (seconds since 1970), or nil when there is nothing to refresh.
    public private(set) var nextFetch: Int?

    /// The most a failed fetch waits before the next try.
    public static let maxBackoff = 30
    /// How far ahead of the end credentials are refreshed at the latest.
    public static let refreshMargin = 300

    /// Nothing held yet: fetch at `now`.
    public init(now: Int) {
        nextFetch = now
    }

    /// A fetch brought `credentials` at `now`. Returns when to fetch next (nil: never).
    @discardableResult
    public mutating func fetched(_ credentials: Credentials, now: Int) -> Int? {
        if let end = credentials.expiration, end <= now { return failed(now: now) }
        current = credentials
        failures = 0
        nextFetch = credentials.expiration.map { Self.refreshTime(expiration: $0, obtainedAt: now) }
        return nextFetch
    }

    /// A fetch failed at `now`; the last good credentials stay. Returns when to try again.
    @discardableResult
    public mutating func failed(now: Int) -> Int {
        failures += 1
        var delay = min(Self.maxBackoff, 1 << min(failures - 1, 5))
        if let end = current?.expiration, end > now {
            delay = min(delay, max(1, (end - now) / 4))
        }
        nextFetch = now + delay
        return now + delay
    }

    /// Whether `current` can sign at `now`: there are credentials and they have not ended.
    public func isUsable(now: Int) -> Bool {
        guard let current else { return false }
        guard let end = current.expiration else { return true }
        return end > now
    }

    /// The moment to refresh credentials ending at `expiration`, fetched at `obtainedAt`:
    /// `refreshMargin` before the end, or halfway when they last less than twice that; never
    /// before `obtainedAt + 1`.
    public static func refreshTime(expiration: Int, obtainedAt: Int) -> Int {
        let lead = min(refreshMargin, (expiration - obtainedAt) / 2)
        return max(obtainedAt + 1, expiration - lead)
    }
}
