/// Time as the engine sees it, in Unix milliseconds: a port, so tests drive a job's ticks,
/// backoffs, pacing and timeout by hand instead of waiting for them.
public protocol EngineClock: Sendable {
    func now() -> Int
    /// Returns once `now()` has reached `deadline`; throws `CancellationError` when cancelled.
    func sleep(until deadline: Int) async throws
}

extension EngineClock {
    public func sleep(milliseconds: Int) async throws {
        try await sleep(until: now() + milliseconds)
    }
}

/// The wall clock.
public struct SystemClock: EngineClock {
    public init() {}

    public func now() -> Int {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return spec.tv_sec * 1000 + spec.tv_nsec / 1_000_000
    }

    public func sleep(until deadline: Int) async throws {
        let wait = deadline - now()
        if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) } else { try Task.checkCancellation() }
    }
}

#if canImport(Glibc)
    import Glibc
#endif
