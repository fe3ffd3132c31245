/// Who may read and write an object, as the gateway's access levels say.
///
/// The gateway builds the bucket's object key from the level, the caller's identity and the
/// key: `public/{key}`, `protected/{identityId}/{key}`, `private/{identityId}/{key}`.
public enum AccessLevel: String, Codable, Sendable, CaseIterable {
    /// Any signed-in user reads and writes.
    case `public`
    /// Any signed-in user reads (naming the owner); only the owner writes.
    case protected
    /// Only the owner reads and writes.
    case `private`
}
