/// An object as the gateway names it: an access level, a key in the caller's key space and, for
/// another identity's `protected` file, its owner.
///
/// ```swift
/// let mine = ObjectReference.private("photos/cat.jpg")
/// let theirs = ObjectReference.protected("avatar.png", owner: "us-east-1:6f1c…")
/// ```
public struct ObjectReference: Codable, Hashable, Sendable, CustomStringConvertible {
    /// The access level.
    public var accessLevel: AccessLevel
    /// The key, without the level's prefix (`notes/a.txt`).
    public var key: String
    /// The owner's identity id (the API's `targetIdentityId`), to read another identity's
    /// `protected` file; `nil` means the caller.
    public var owner: String?

    /// An object reference; `owner` only with `.protected` (or naming the caller).
    public init(accessLevel: AccessLevel, key: String, owner: String? = nil) {
        self.accessLevel = accessLevel
        self.key = key
        self.owner = owner
    }

    /// A `public` object.
    public static func `public`(_ key: String) -> ObjectReference { ObjectReference(accessLevel: .public, key: key) }

    /// A `protected` object: the caller's own, or `owner`'s to read.
    public static func protected(_ key: String, owner: String? = nil) -> ObjectReference {
        ObjectReference(accessLevel: .protected, key: key, owner: owner)
    }

    /// A `private` object of the caller.
    public static func `private`(_ key: String) -> ObjectReference { ObjectReference(accessLevel: .private, key: key) }

    /// The command line's spelling: `LEVEL/KEY`, or `protected@OWNER/KEY` for another identity's
    /// protected file (an identity id holds no `/`, so the first segment carries the whole owner).
    public var description: String {
        if let owner { return "\(accessLevel.rawValue)@\(owner)/\(key)" }
        return "\(accessLevel.rawValue)/\(key)"
    }
}
