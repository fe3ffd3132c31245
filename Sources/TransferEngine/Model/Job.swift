/// A transfer job as the engine and the API see it.
public struct Job: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable { case upload, `import`, copy, download }

    public enum State: String, Sendable, CaseIterable {
        case pending, queued, running, paused, completed, failed, canceled

        /// No further change is possible.
        public var isFinal: Bool { self == .completed || self == .failed || self == .canceled }

        /// The states a job is still alive in (what the per-identity limit of active jobs counts).
        public static let active: [State] = allCases.filter { !$0.isFinal }
    }

    public var id: String
    public var owner: String
    public var kind: Kind
    public var state: State
    public var objectKey: String?
    /// Where the bytes come from.
    public var source: JobSource
    public var options: JobOptions
    public var bytesTotal: Int64?
    public var bytesTransferred: Int64
    public var bytesCommitted: Int64
    public var partSize: Int64
    public var partsTotal: Int?
    public var uploadID: String?
    /// How the parts of `uploadID` are checked; nil for an upload created before this was
    /// recorded (its parts carry `Content-MD5`).
    public var partChecksum: PartChecksum?
    public var etag: String?
    /// The completed object's full-object checksum, when the job knows it (`ObjectChecksum`).
    public var checksum: ObjectChecksum?
    /// Why the job failed, when it did.
    public var error: JobFailure?
    /// Times a worker took the job up (each run after a wait, a yield or a crash counts).
    public var attempts: Int
    /// When a job sent back to `queued` by a failure that may pass is run again (Unix
    /// milliseconds); nil when it waits for nothing.
    public var retryAt: Int64?
    /// The failure that last sent the job back to wait (kept after it moves on).
    public var lastError: JobFailure?
    /// Waits in a row since the job last recorded a part: the exponent of its backoff.
    public var retries = 0
    /// Times a holder lost the job without handing it back (its process died or hung past the
    /// lease): the engine refuses to run a job that has done this `EngineSettings.crashLimit` times.
    public var crashes: Int = 0
    /// The job has begun to write its object (the completion, or a one-part object's single
    /// write): from then on it can only end completed or failed, never paused or canceled, since
    /// the object in S3 may already be the new one (`JobStore.beginCompleting`).
    public var completing = false
    /// The source's ETag when the job first planned its parts: a source that changes after that
    /// fails the job with `source_changed` instead of mixing two versions.
    public var sourceETag: String?
    /// Bytes moved so far counting those inside parts still in flight (for an upload, bytes
    /// received onto the spool): the live figure, written at most once a second; 0 when none.
    public var bytesFlowing: Int64 = 0
    /// What `bytesTransferred` shows a client: the live figure while the job runs.
    public var progressShown: Int64 {
        if state.isFinal { return bytesTransferred }
        let live = max(bytesTransferred, bytesCommitted, bytesFlowing)
        return bytesTotal.map { min($0, live) } ?? live
    }
    /// Parts recorded so far.
    public var partsCompleted: Int = 0
    /// Bumped on every change: the API's ETag and long-poll key.
    public var version: Int64
    /// Unix time in milliseconds.
    public var createdAt: Int64
    public var updatedAt: Int64
    /// When the job last made progress (its creation before that): an upload job's last bytes
    /// received, another job's last part recorded. An upload idle for `GATEWAY_UPLOAD_TTL` since
    /// then expires; a job waiting out failures gives up after `GATEWAY_RETRY_WINDOW` since then.
    public var bytesAt: Int64 = 0
    public var completedAt: Int64?

    public init(
        id: String, owner: String, kind: Kind, state: State, objectKey: String?, source: JobSource,
        options: JobOptions = JobOptions(), bytesTotal: Int64?, partSize: Int64
    ) {
        self.id = id
        self.owner = owner
        self.kind = kind
        self.state = state
        self.objectKey = objectKey
        self.source = source
        self.options = options
        self.bytesTotal = bytesTotal
        self.bytesTransferred = 0
        self.bytesCommitted = 0
        self.partSize = partSize
        self.partsTotal = nil
        self.uploadID = nil
        self.etag = nil
        self.error = nil
        self.attempts = 0
        self.retryAt = nil
        self.lastError = nil
        self.version = 1
        self.createdAt = 0
        self.updatedAt = 0
        self.completedAt = nil
    }
}

/// The right to work on a job until `expiresAt`. Every write made under a lease carries its
/// token, so a worker that lost the lease (stalled past it) cannot overwrite the new owner's work.
public struct Lease: Sendable, Equatable {
    public let jobID: String
    public let owner: String
    public let token: Int64
    /// Unix time in milliseconds.
    public let expiresAt: Int64

    public init(jobID: String, owner: String, token: Int64, expiresAt: Int64) {
        self.jobID = jobID
        self.owner = owner
        self.token = token
        self.expiresAt = expiresAt
    }
}

/// A part S3 acknowledged, as recorded before it counts.
public struct RecordedPart: Sendable, Equatable {
    public let number: Int
    public let size: Int64
    public let etag: String
    /// The part's CRC-32C (base64) when its upload was created with that algorithm: the
    /// completion must list it.
    public let checksum: String?

    public init(number: Int, size: Int64, etag: String, checksum: String? = nil) {
        self.number = number
        self.size = size
        self.etag = etag
        self.checksum = checksum
    }
}

/// How the parts of a job's multipart upload prove their bytes to S3. `crc32c`: the upload is
/// created with that algorithm and every part carries its `x-amz-checksum-crc32c` (cheap: the
/// CPU computes it). `md5`: each part carries `Content-MD5`, for stores without S3's checksum
/// headers and for uploads created before the algorithm was declared.
public enum PartChecksum: String, Sendable, CaseIterable {
    case crc32c, md5
}
