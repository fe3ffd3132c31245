/// The full-object checksums of objects the gateway wrote, by key and ETag: what
/// `GET /v1/objects/properties` and a download's data answers report. An object replaced
/// outside the gateway has another ETag, so it has no checksum here, which is the truth.
public protocol ObjectChecksumStore: Sendable {
    /// The checksum recorded for `key` while it has `etag`; nil when none is.
    func checksum(ofKey key: String, etag: String) async throws -> ObjectChecksum?
    /// Records `checksum` for `key` at `etag` (a later record for the same pair replaces it).
    func record(_ checksum: ObjectChecksum, key: String, etag: String) async throws
}
