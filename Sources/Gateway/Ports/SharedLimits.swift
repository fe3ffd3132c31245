/// Per-identity counts kept for the whole deployment (PostgreSQL), so that N instances behind a
/// balancer allow what one would: creation tokens (`GATEWAY_USER_RATE`) and holds — long polls
/// and event streams (`GATEWAY_USER_MAX_WAITS`), streams of job data (`GATEWAY_USER_MAX_STREAMS`).
/// Without one, each instance counts alone.
public protocol SharedLimits: Sendable {
    /// Takes one of `identity`'s creation tokens from a bucket of `burst` refilled at
    /// `perSecond`; nil when taken, else the whole seconds until one will be there.
    func takeCreation(_ identity: String, perSecond: Double, burst: Double) async throws -> Int?
    /// One of `identity`'s `limit` holds of `kind`; nil when all are held (on any instance).
    func hold(_ kind: SharedHold.Kind, for identity: String, limit: Int) async throws -> SharedHold?
    /// Gives a hold back.
    func release(_ hold: SharedHold) async
}

/// A hold taken from `SharedLimits`, given back by `release`.
public struct SharedHold: Sendable, Hashable {
    /// What is held open.
    public enum Kind: String, Sendable {
        /// A long poll or an event stream.
        case wait
        /// A stream of job data.
        case stream
    }

    public let id: String
    public let kind: Kind

    public init(id: String, kind: Kind) {
        self.id = id
        self.kind = kind
    }
}
