import TransferEngine

/// A client-driven multipart upload (`/v1/uploads`) as recorded: who owns it, its S3 upload and
/// its plan. Recorded `creating` before S3 is asked, so a crash in between leaves a record.
public struct ClientUpload: Sendable, Equatable {
    /// Different checksums kept per part (`ClientUploadStore.signed`): two tell that a part is
    /// ambiguous, and a client signing one part over and over adds no rows past them.
    public static let checksumsKeptPerPart = 2

    /// `creating` → `open` → `completing` → `completed`, or → `aborting` → `aborted`. Complete
    /// and abort each claim the record (`open` → `completing` / `aborting`) before touching S3,
    /// so only one of them happens; a claim whose S3 call fails goes back to `open`.
    public enum State: String, Sendable {
        case creating, open, completing, completed, aborting, aborted
    }

    /// A completion or abort claimed this long ago whose request never finished it is taken
    /// over by the next request that asks for the same.
    public static let staleClaimSeconds = 30

    public var id: String
    public var owner: String
    public var objectKey: String
    public var s3UploadID: String?
    public var size: Int64
    public var partSize: Int64
    public var partCount: Int
    public var state: State
    public var etag: String?
    /// Seconds since 1970.
    public var createdAt: Double
    /// `crc32c`: the upload was created with `checksumAlgorithm: CRC32C`: its S3 multipart
    /// upload declares that algorithm and every part URL signs the part's checksum, so S3
    /// refuses other bytes. Nil: parts carry no checksum.
    public var partChecksum: PartChecksum?
    /// The completed object's full-object checksum, when its parts' checksums were known.
    public var checksum: ObjectChecksum?

    public init(
        id: String, owner: String, objectKey: String, s3UploadID: String?, size: Int64, partSize: Int64,
        partCount: Int, state: State, etag: String? = nil, createdAt: Double = 0, partChecksum: PartChecksum? = nil,
        checksum: ObjectChecksum? = nil
    ) {
        self.partChecksum = partChecksum
        self.checksum = checksum
        self.id = id
        self.owner = owner
        self.objectKey = objectKey
        self.s3UploadID = s3UploadID
        self.size = size
        self.partSize = partSize
        self.partCount = partCount
        self.state = state
        self.etag = etag
        self.createdAt = createdAt
    }
}

/// Where client-driven uploads are recorded (PostgreSQL; memory in tests).
public protocol ClientUploadStore: Sendable {
    /// Records a new upload (`creating`) within the owner's quota; throws `QuotaExceeded`.
    func begin(_ upload: ClientUpload, quota: OwnerQuota) async throws
    /// S3 gave the upload its id: it is `open`.
    func opened(id: String, s3UploadID: String) async throws
    func upload(id: String) async throws -> ClientUpload?
    /// The owner's open uploads, newest first, after the upload `cursor` (the last id of the
    /// previous page), at most `limit`.
    func open(owner: String, limit: Int, after cursor: String?) async throws -> [ClientUpload]
    /// The client asked for part URLs: the upload is not idle.
    func touch(id: String) async throws
    /// Moves the upload from `open` to `state` (`completing` or `aborting`), or takes over a
    /// claim of the same kind made `ClientUpload.staleClaimSeconds` ago or more (its request
    /// died with its instance: the step is idempotent, so it is done again); false otherwise
    /// (another request holds it, or it has ended).
    func claim(id: String, for state: ClientUpload.State) async throws -> Bool
    /// A claim whose S3 call failed: `completing` or `aborting` back to `open`.
    func unclaim(id: String) async throws
    /// The completion claimed before is done; `checksum` is the object's, when known.
    func completed(id: String, etag: String, checksum: ObjectChecksum?) async throws
    /// Part URLs were signed with these checksums (part number, base64 CRC-32C). Up to
    /// `ClientUpload.checksumsKeptPerPart` different ones are kept per part: S3 holds bytes
    /// matching one of them, and a part with more than one is ambiguous whatever else comes.
    func signed(id: String, partChecksums: [(part: Int, checksum: String)]) async throws
    /// The checksums signed for each part of the upload.
    func signedChecksums(id: String) async throws -> [Int: Set<String>]
    /// Marks the upload aborted if it is `open`, `creating`, `aborting` or `completing` (S3 has
    /// no such upload any more); returns whether it was.
    @discardableResult
    func aborted(id: String) async throws -> Bool
    /// Uploads `open`, `creating`, `completing` or `aborting` under `prefixes` that nobody touched since `cutoff`
    /// (seconds since 1970): the janitor's candidates.
    func idle(since cutoff: Double, prefixes: [String]) async throws -> [ClientUpload]
}

extension ClientUploadStore {
    /// The completion claimed before is done, its object's checksum unknown.
    public func completed(id: String, etag: String) async throws {
        try await completed(id: id, etag: etag, checksum: nil)
    }
}
