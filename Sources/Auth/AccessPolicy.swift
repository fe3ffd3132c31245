/// The three access levels and who may read or write under each.
///
/// | level       | object key                     | read                       | write      |
/// |-------------|--------------------------------|----------------------------|------------|
/// | `public`    | `public/{key}`                 | signed in (guests if allowed) | signed in |
/// | `protected` | `protected/{identityId}/{key}` | signed in, naming the owner | owner     |
/// | `private`   | `private/{identityId}/{key}`   | owner                      | owner      |
public enum AccessLevel: String, Sendable, Codable, CaseIterable {
    case `public`, protected, `private`
}

public enum AccessMode: Sendable, Equatable {
    /// get, head, download, copy source.
    case read
    /// put, multipart, delete.
    case write
}

/// Why an access was refused: 400 for a bad key or request, 401 without identity, 403 otherwise.
public enum AccessDenial: Error, Equatable, Sendable {
    case invalidKey(String)
    case signInRequired
    case forbidden(String)
}

public struct AccessPolicy: Sendable {
    public let allowGuestRead: Bool

    public init(allowGuestRead: Bool) {
        self.allowGuestRead = allowGuestRead
    }

    /// Checks the access and returns the full object key.
    public func objectKey(
        for mode: AccessMode, level: AccessLevel, key: String, identity: Identity,
        targetIdentityID: String? = nil
    ) throws(AccessDenial) -> String {
        try ObjectKey.make(
            prefix: try prefix(for: mode, level: level, identity: identity, targetIdentityID: targetIdentityID),
            key: key)
    }

    /// Checks the access and returns the level's key prefix (`public/`,
    /// `protected/{identityId}/`, `private/{identityId}/`): where an object key begins, and
    /// what a listing of the level lists under.
    public func prefix(
        for mode: AccessMode, level: AccessLevel, identity: Identity,
        targetIdentityID: String? = nil
    ) throws(AccessDenial) -> String {
        // A malformed id (a noncharacter, a `/`) is a bad request whoever it names, on every level.
        if let target = targetIdentityID, !Identity.isValidID(target) {
            throw .invalidKey("targetIdentityId is not a valid identity id")
        }
        let owner: String
        switch level {
        case .public:
            if identity.id == nil && !(mode == .read && allowGuestRead) { throw .signInRequired }
            if let target = targetIdentityID {
                // Naming someone else on a write is refused as a write for them would be.
                if mode == .write && !(identity.id.map { Self.same(target, $0) } ?? false) {
                    throw .forbidden("targetIdentityId may name only the caller on a write")
                }
                throw .invalidKey("targetIdentityId is only for protected files")
            }
            return "public/"
        case .protected:
            guard let id = identity.id else { throw .signInRequired }
            owner = targetIdentityID ?? id
            // Bytes, not Swift's `==`: canonically equivalent spellings of two ids are two ids.
            if mode == .write && !Self.same(owner, id) { throw .forbidden("only the owner may write protected files") }
        case .private:
            guard let id = identity.id else { throw .signInRequired }
            owner = targetIdentityID ?? id
            if !Self.same(owner, id) { throw .forbidden("private files belong to their owner only") }
        }
        guard Identity.isValidID(owner) else { throw .invalidKey("targetIdentityId is not a valid identity id") }
        return level.rawValue + "/" + owner + "/"
    }

    /// Identity ids are compared byte for byte (`"jos\u{E9}"` and `"jose\u{301}"` are
    /// different people, though Swift's `String ==` calls them equal).
    public static func same(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
    }
}
