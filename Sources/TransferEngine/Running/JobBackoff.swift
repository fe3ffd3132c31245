/// The wait before a job sent back to `queued` by a failure that may pass (S3 or a source
/// unavailable past a part's retries) runs again: `base` doubled for every wait in a row since
/// the job last recorded a part, at most `cap`, less up to a fifth at random so that jobs sent
/// back by the same outage do not all return at once. With the defaults: about 10 s, 20 s,
/// 40 s, … then 5 minutes, never more.
public struct JobBackoff: Sendable, Equatable {
    public var baseMilliseconds: Int
    public var capMilliseconds: Int

    public init(baseMilliseconds: Int = 10_000, capMilliseconds: Int = 300_000) {
        self.baseMilliseconds = baseMilliseconds
        self.capMilliseconds = capMilliseconds
    }

    /// The wait before run number `wait` (1 for the first wait in a row), given `unit` uniformly
    /// in [0, 1): within [0.8, 1] × min(cap, base × 2^(wait−1)).
    public func delay(wait: Int, unit: Double) -> Int {
        let ceiling = Backoff(baseMilliseconds: baseMilliseconds, capMilliseconds: capMilliseconds).ceiling(retry: wait)
        let jitter = min(max(unit, 0), 1) * 0.2
        return Int((Double(ceiling) * (1 - jitter)).rounded(.up))
    }
}
