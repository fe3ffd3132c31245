/// An object the gateway deleted or moved, as the event feed tells it (`object.deleted`,
/// `object.moved`). Job and upload changes are recorded by the database with the change; these
/// are recorded by the object routes once S3 has done the change.
public struct ObjectChange: Sendable, Equatable, Codable {
    /// Where an object is (or was).
    public struct Place: Sendable, Equatable, Codable {
        /// `public`, `protected` or `private`.
        public var accessLevel: String
        /// The key in its owner's key space, as the client names it.
        public var key: String
        /// Whose key space (protected and private levels).
        public var identityId: String?
        /// The full S3 key.
        public var objectKey: String

        public init(accessLevel: String, key: String, identityId: String?, objectKey: String) {
            self.accessLevel = accessLevel
            self.key = key
            self.identityId = identityId
            self.objectKey = objectKey
        }
    }

    /// The object deleted, or where a moved one was.
    public var source: Place
    /// Where a moved object is now (nil for a delete).
    public var destination: Place?
    /// A moved object's size and new ETag.
    public var size: Int64?
    public var etag: String?

    public init(source: Place, destination: Place? = nil, size: Int64? = nil, etag: String? = nil) {
        self.source = source
        self.destination = destination
        self.size = size
        self.etag = etag
    }

    /// The identities whose feeds hear of the change: the caller's, and the owner of each key
    /// space it touched.
    public func audience(caller: String?) -> Set<String> {
        Set([caller, source.identityId, destination?.identityId].compactMap { $0 })
    }
}
