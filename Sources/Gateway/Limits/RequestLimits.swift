import Auth
import TransferEngine

/// The per-identity limits routes apply (`GATEWAY_USER_*`): creations per second, what one
/// identity may hold at once (checked by the stores as they insert), and open waits.
struct RequestLimits: Sendable {
    let rate: CreationRate
    let quota: OwnerQuota
    let waits: PerIdentityCount
    /// Streams of job data open per job owner (`GATEWAY_USER_MAX_STREAMS`).
    let streams: PerIdentityCount

    /// One creation (job, upload) for `owner`, or 429 `quota_exceeded` with `Retry-After`.
    func admitCreation(_ owner: String) throws(APIError) {
        if let seconds = rate.take(owner) {
            throw APIError.quotaExceeded(
                "This identity creates more than \(Int(rate.perSecond)) jobs or uploads a second.",
                retryAfter: seconds)
        }
    }

    /// Runs `wait` while holding one of `owner`'s wait slots, or answers 429 when all are held.
    func holdingWait<T: Sendable>(_ owner: String, _ wait: () async throws -> T) async throws -> T {
        guard waits.acquire(owner) else {
            throw APIError.quotaExceeded("This identity holds \(waits.limit) long polls or event streams already.", retryAfter: 5)
        }
        defer { waits.release(owner) }
        return try await wait()
    }

    /// One of `owner`'s data-stream slots, or 429 when all are held. Held until released, or
    /// until the last reference goes (an answer dropped unsent gives it back too).
    func admitStream(_ owner: String) throws(APIError) -> HeldSlot {
        guard streams.acquire(owner) else {
            throw APIError.quotaExceeded(
                "This identity's job data is being streamed \(streams.limit) times at once already.",
                retryAfter: 5)
        }
        return HeldSlot(streams, owner)
    }
}

/// Work a request starts that must run to its end even when the client hangs up (its task is
/// then cancelled): multi-step changes to S3 and the database, an upload's bookkeeping.
enum Shield {
    static func run<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await Task { try await work() }.value
    }
}
