/// What a create request sent with an `Idempotency-Key` made (its status and `Location`), kept
/// so the same key and body from the same identity are answered with it again (and another body
/// a 422) for 24 hours. `body` is kept empty by the gateway: a repeat is answered from the thing.
public struct StoredAnswer: Sendable, Equatable {
    public var status: Int
    public var location: String?
    public var body: [UInt8]

    public init(status: Int, location: String?, body: [UInt8]) {
        self.status = status
        self.location = location
        self.body = body
    }
}

/// What a key was found to be when a request claimed it.
public enum IdempotencyClaim: Sendable, Equatable {
    /// New (or expired): this request makes the thing, then records or releases the key.
    case claimed
    /// Answered before, for a request with this fingerprint.
    case answered(StoredAnswer, fingerprint: String)
    /// Another request with this key is making the thing now.
    case inProgress(fingerprint: String)
}

/// Where idempotency keys live (PostgreSQL, so every instance sees them; memory in tests).
/// A key is scoped by the identity and the route (`scope`), and lives `lifetimeSeconds`.
public protocol IdempotencyStore: Sendable {
    func claim(owner: String, scope: String, key: String, fingerprint: String, lifetimeSeconds: Int) async throws -> IdempotencyClaim
    func record(owner: String, scope: String, key: String, answer: StoredAnswer) async throws
    /// Forgets a claim whose request failed, so the client's retry makes the thing.
    func release(owner: String, scope: String, key: String) async throws
}
