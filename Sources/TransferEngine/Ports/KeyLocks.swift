/// Serializes the gateway's conditional writes (`WriteCondition`) to one key across every
/// instance. A store checks `If-None-Match: *` or `If-Match` on each write, but two writes at the
/// same instant may both pass its check (SeaweedFS's completions do); holding the key while the
/// write runs makes the second write see the first one's object.
///
/// A lock is a lease: one whose holder died lapses after `KeyLockToken.lease` seconds.
public protocol KeyLocks: Sendable {
    /// Waits until the key is the caller's, or fails with a retryable `storageUnavailable` when
    /// an ask sent a lease's length after the wait began still finds the key held (a holder that
    /// crashed is waited out, a live one is not waited for ever; a slow answer to an earlier ask
    /// does not end the wait).
    func lock(_ key: String) async throws -> KeyLockToken

    /// Lets the key go (a lock already lapsed is left to its new holder).
    func unlock(_ token: KeyLockToken) async
}

/// A key held by one writer.
public struct KeyLockToken: Sendable, Equatable {
    /// Seconds a lock lasts when its holder never lets it go.
    public static let lease = 120.0

    public let key: String
    /// Unique to this holding.
    public let holder: String

    public init(key: String, holder: String) {
        self.key = key
        self.holder = holder
    }
}

extension KeyLocks {
    /// Runs `body` while holding `key`, letting it go however `body` ends.
    public func withLock<T>(_ key: String, _ body: () async throws -> T) async throws -> T {
        let token = try await lock(key)
        do {
            let result = try await body()
            await unlock(token)
            return result
        } catch {
            await unlock(token)
            throw error
        }
    }
}
