import Gateway
import Synchronization

/// The idempotency keys' twin: claims and answers in memory, under the PostgreSQL store's
/// rules (`IdempotencyStoreContract` in PortContracts runs the same cases on both): a key older
/// than the claim's lifetime is new again, and a claim left unanswered for a minute (its
/// request died) is let go. Time is `now`, seconds since 1970; left at its default it stands
/// still, so keys never expire.
public final class InMemoryIdempotencyStore: IdempotencyStore {
    private struct Entry {
        let fingerprint: String
        let createdAt: Double
        var answer: StoredAnswer?
    }
    private struct ID: Hashable {
        let owner: String
        let scope: String
        let key: String
    }
    private let entries = Mutex<[ID: Entry]>([:])
    private let now: @Sendable () -> Double

    /// `now`: seconds since 1970 on the test's clock.
    public init(now: @escaping @Sendable () -> Double = { 0 }) {
        self.now = now
    }

    /// How long a claim may stay unanswered before another request may take its key.
    static let abandonedAfter = 60.0

    public func claim(owner: String, scope: String, key: String, fingerprint: String, lifetimeSeconds: Int) async throws -> IdempotencyClaim
    {
        let time = now()
        let id = ID(owner: owner, scope: scope, key: key)
        return entries.withLock { e in
            // Expired keys go first (PostgreSQL sweeps the identity's and a few of anyone's; the
            // twin sweeps them all), and this key's claim if its request died.
            e = e.filter { $0.value.createdAt >= time - Double(lifetimeSeconds) }
            if let entry = e[id], entry.answer == nil, entry.createdAt < time - Self.abandonedAfter { e[id] = nil }
            guard let entry = e[id] else {
                e[id] = Entry(fingerprint: fingerprint, createdAt: time)
                return .claimed
            }
            if let answer = entry.answer { return .answered(answer, fingerprint: entry.fingerprint) }
            return .inProgress(fingerprint: entry.fingerprint)
        }
    }

    public func record(owner: String, scope: String, key: String, answer: StoredAnswer) async throws {
        entries.withLock { $0[ID(owner: owner, scope: scope, key: key)]?.answer = answer }
    }

    public func release(owner: String, scope: String, key: String) async throws {
        entries.withLock { e in
            let id = ID(owner: owner, scope: scope, key: key)
            if e[id] != nil && e[id]?.answer == nil { e[id] = nil }
        }
    }
}
