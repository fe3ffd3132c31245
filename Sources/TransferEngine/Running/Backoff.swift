/// Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
/// Jitter"): the wait before retry n is a random duration in [0, min(cap, base × 2ⁿ)].
/// The random source is a parameter, so tests are exact.
public struct Backoff: Sendable, Equatable {
    public var baseMilliseconds: Int
    public var capMilliseconds: Int

    public init(baseMilliseconds: Int = 200, capMilliseconds: Int = 20_000) {
        self.baseMilliseconds = baseMilliseconds
        self.capMilliseconds = capMilliseconds
    }

    /// The upper bound of the wait before retry `retry` (1 for the first retry).
    public func ceiling(retry: Int) -> Int {
        let exponent = min(max(retry - 1, 0), 30)
        let grown = baseMilliseconds.multipliedReportingOverflow(by: 1 << exponent)
        return grown.overflow ? capMilliseconds : min(capMilliseconds, grown.partialValue)
    }

    /// The wait before retry `retry`, given `unit` uniformly in [0, 1).
    public func delay(retry: Int, unit: Double) -> Int {
        Int((Double(ceiling(retry: retry)) * min(max(unit, 0), 0.999_999)).rounded(.down))
    }
}

extension EngineClock {
    /// Runs `body`, again after a backoff (full jitter from `random`) while it fails in a way a
    /// retry can help, at most `limit` more times.
    func retrying<T: Sendable>(
        limit: Int, backoff: Backoff, random: @Sendable () -> Double,
        _ body: @Sendable () async throws -> T
    ) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error as TransferError where error.retryable && attempt <= limit {
                try await sleep(milliseconds: backoff.delay(retry: attempt, unit: random()))
                attempt += 1
            }
        }
    }
}
