import Synchronization

/// How many of something one identity holds at once on this instance (long polls and event
/// streams: `GATEWAY_USER_MAX_WAITS`; data streams: `GATEWAY_USER_MAX_STREAMS`).
final class PerIdentityCount: Sendable {
    let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// One more for `identity`, unless it holds `limit` already.
    func acquire(_ identity: String) -> Bool {
        counts.withLock { c in
            let now = c[identity, default: 0]
            guard now < limit else { return false }
            c[identity] = now + 1
            return true
        }
    }

    /// Held now, across identities.
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }

    func release(_ identity: String) {
        counts.withLock { c in
            guard let now = c[identity] else { return }
            if now <= 1 { c.removeValue(forKey: identity) } else { c[identity] = now - 1 }
        }
    }
}

/// One slot of a `PerIdentityCount` (and its hold in the deployment's `SharedLimits`, if any),
/// given back once: by `release()` or when the last reference goes.
final class HeldSlot: Sendable {
    private let count: PerIdentityCount
    private let identity: String
    private let shared: (any SharedLimits, SharedHold)?
    private let held = Atomic<Bool>(true)

    init(_ count: PerIdentityCount, _ identity: String, shared: (any SharedLimits, SharedHold)? = nil) {
        self.count = count
        self.identity = identity
        self.shared = shared
    }

    func release() {
        guard held.exchange(false, ordering: .acquiringAndReleasing) else { return }
        guard let (limits, hold) = shared else { return count.release(identity) }
        // The local count last: once this instance shows the slot free, the fleet does too.
        Task { [count, identity] in
            await limits.release(hold)
            count.release(identity)
        }
    }

    deinit { release() }
}

/// Creations per second per identity (`GATEWAY_USER_RATE`), as a token bucket holding five
/// seconds' worth: bursts are allowed, a sustained flood is not. Buckets of identities that went
/// quiet are dropped, so the table stays bounded however many identities call.
final class CreationRate: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: Double
    }

    let perSecond: Double
    let burst: Double
    private let now: @Sendable () -> Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Buckets kept before the full ones (idle identities) are dropped.
    static let maxBuckets = 100_000

    init(perSecond: Double, now: @escaping @Sendable () -> Double) {
        self.perSecond = max(0.001, perSecond)
        self.burst = max(1, perSecond * 5)
        self.now = now
    }

    /// Takes one token; when there is none, the whole seconds until there will be.
    func take(_ identity: String) -> Int? {
        let time = now()
        return buckets.withLock { b -> Int? in
            if b.count >= Self.maxBuckets { drop(full: &b, at: time) }
            var bucket = b[identity] ?? Bucket(tokens: burst, at: time)
            bucket.tokens = min(burst, bucket.tokens + (time - bucket.at) * perSecond)
            bucket.at = time
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                b[identity] = bucket
                return nil
            }
            b[identity] = bucket
            return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
        }
    }

    private func drop(full b: inout [String: Bucket], at time: Double) {
        b = b.filter { min(burst, $0.value.tokens + (time - $0.value.at) * perSecond) < burst }
    }
}
