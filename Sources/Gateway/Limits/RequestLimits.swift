import Auth
import TransferEngine

/// The per-identity limits routes apply (`GATEWAY_USER_*`): creations per second, what one
/// identity may hold at once (checked by the stores as they insert), open waits and data
/// streams. With `shared` (PostgreSQL), rates and holds are counted for the whole deployment;
/// the instance's own counts still bound it and feed its gauges.
struct RequestLimits: Sendable {
    let rate: CreationRate
    let quota: OwnerQuota
    let waits: PerIdentityCount
    /// Streams of job data open per job owner (`GATEWAY_USER_MAX_STREAMS`).
    let streams: PerIdentityCount
    let shared: (any SharedLimits)?

    /// One creation (job, upload) for `owner`, or 429 `quota_exceeded` with `Retry-After`.
    func admitCreation(_ owner: String) async throws {
        let wait: Int?
        if let shared {
            wait = try await shared.takeCreation(owner, perSecond: rate.perSecond, burst: rate.burst)
        } else {
            wait = rate.take(owner)
        }
        if let seconds = wait {
            throw APIError.quotaExceeded(
                "This identity creates more than \(Int(rate.perSecond)) jobs or uploads a second.",
                retryAfter: seconds)
        }
    }

    /// One of `owner`'s wait slots (long polls, event streams), or 429 when all are held.
    func admitWait(_ owner: String) async throws -> HeldSlot {
        try await admit(owner, waits, .wait) {
            APIError.quotaExceeded("This identity holds \(waits.limit) long polls or event streams already.", retryAfter: 5)
        }
    }

    /// Runs `wait` while holding one of `owner`'s wait slots, or answers 429 when all are held.
    func holdingWait<T: Sendable>(_ owner: String, _ wait: () async throws -> T) async throws -> T {
        let slot = try await admitWait(owner)
        defer { slot.release() }
        return try await wait()
    }

    /// One of `owner`'s data-stream slots, or 429 when all are held. Held until released, or
    /// until the last reference goes (an answer dropped unsent gives it back too).
    func admitStream(_ owner: String) async throws -> HeldSlot {
        try await admit(owner, streams, .stream) {
            APIError.quotaExceeded(
                "This identity's job data is being streamed \(streams.limit) times at once already.",
                retryAfter: 5)
        }
    }

    private func admit(
        _ owner: String, _ count: PerIdentityCount, _ kind: SharedHold.Kind, refused: () -> APIError
    ) async throws -> HeldSlot {
        guard count.acquire(owner) else { throw refused() }
        guard let shared else { return HeldSlot(count, owner) }
        let hold: SharedHold?
        do {
            hold = try await shared.hold(kind, for: owner, limit: count.limit)
        } catch {
            count.release(owner)
            throw error
        }
        guard let hold else {
            count.release(owner)
            throw refused()
        }
        return HeldSlot(count, owner, shared: (shared, hold))
    }
}

/// Work a request starts that must run to its end even when the client hangs up (its task is
/// then cancelled): multi-step changes to S3 and the database, an upload's bookkeeping.
enum Shield {
    static func run<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await Task { try await work() }.value
    }
}
