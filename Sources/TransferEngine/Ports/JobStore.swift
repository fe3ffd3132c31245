/// Where jobs live (PostgreSQL in production, memory in tests). Lists only what the engine and
/// the API use. Every write under a lease fails with `LeaseLost` when the lease's token is no
/// longer the job's: another instance took the job over.
public protocol JobStore: Sendable {
    /// Stores a new job; returns it as stored (timestamps set by the store). With a `quota`,
    /// throws `QuotaExceeded` (and stores nothing) when the owner is at its limit.
    @discardableResult
    func insert(_ job: Job, quota: OwnerQuota?) async throws -> Job
    func job(id: String) async throws -> Job?

    /// Takes a runnable job (queued, or running with a lapsed lease) for the instance `owner`:
    /// of the identities waiting, the one running fewest jobs goes first (then the oldest job),
    /// so one identity's queue never holds another's back. A job taken from a holder that
    /// neither finished nor released it counts a crash (`Job.crashes`). Jobs of the identities
    /// in `excluding` are passed over (a slot kept for identities that run nothing here).
    func claim(owner: String, leaseMilliseconds: Int64, excluding: Set<String>) async throws -> (Job, Lease)?
    /// Identities (job owners) with runnable jobs waiting to be claimed, at most `limit`.
    func waitingOwners(limit: Int) async throws -> [String]
    /// Extends the lease; throws `LeaseLost` if it was taken over. `flowing`, when given, is the
    /// job's progress inside the parts in flight (`Job.bytesFlowing`), carried on the same write.
    func renew(_ lease: Lease, leaseMilliseconds: Int64, flowing: Int64?) async throws -> Lease
    /// Marks the job as writing its object (`Job.completing`), under its lease, before the
    /// write that makes the object: from then on pause and cancel are refused. Throws `LeaseLost`
    /// when the lease is no longer the job's (canceled, paused or taken over meanwhile): then
    /// the object must not be written.
    func beginCompleting(_ lease: Lease) async throws
    /// Gives the job back at once (SIGTERM): it is runnable again for any instance.
    func release(_ lease: Lease) async throws

    /// Records a finished part and adds its bytes to the job's progress, atomically.
    func recordPart(_ part: RecordedPart, under lease: Lease) async throws
    /// Records several finished parts and adds their bytes to the job's progress, atomically.
    func recordParts(_ parts: [RecordedPart], under lease: Lease) async throws
    func parts(of jobID: String) async throws -> [RecordedPart]
    /// Begins a fresh plan: sets the multipart upload id, the plan and the source's ETag, and
    /// forgets parts recorded under an earlier plan (they belonged to another upload).
    /// `bytesTotal` nil: not known yet (a streamed source); the job's size is then its
    /// committed bytes once it completes.
    /// `partChecksum`: how the new upload's parts are checked (`Job.partChecksum`).
    func start(
        _ lease: Lease, uploadID: String?, partChecksum: PartChecksum?, partsTotal: Int, partSize: Int64,
        bytesTotal: Int64?, sourceETag: String?) async throws
    /// Sends the job back to `queued` under its lease (`JobLifecycle` `postpone`) after a
    /// failure that may pass by waiting: no claim takes it before `retryAt` (Unix milliseconds);
    /// its multipart upload and recorded parts stay; `lastError` shows why, and `Job.retries`
    /// counts one more wait. Throws `LeaseLost` when the lease is no longer the job's.
    func postpone(_ lease: Lease, until retryAt: Int64, lastError: JobFailure) async throws
    /// Its owner's retry of a failed job (`JobLifecycle.retry`): only when its `error` is
    /// `retryable` and it failed at `failedSince` (Unix milliseconds) or later. The job waits
    /// again (`queued`, or `pending` for an upload) with its parts, its error as `lastError`,
    /// and its retry window and crash count starting afresh. Returns the job as it is
    /// afterwards (still `failed` when refused), or nil when there is no such job. With a
    /// `quota`, throws `QuotaExceeded` (and changes nothing) when its owner is at its limit of
    /// active jobs: a retried job is active again.
    func retry(id: String, failedSince: Int64, quota: OwnerQuota?) async throws -> Job?
    /// Ends the job as completed or failed. A completed job's `checksum`, when known, is kept
    /// with it and as the checksum of the object (`objectKey` at `etag`) for
    /// `ObjectChecksumStore` to find.
    func finish(_ lease: Lease, state: Job.State, etag: String?, error: JobFailure?, checksum: ObjectChecksum?) async throws

    /// The owner's jobs (of one state and type, when given), newest first, after `cursor` (the
    /// last id of the previous page).
    func list(owner: String?, state: Job.State?, kind: Job.Kind?, limit: Int, after cursor: String?) async throws -> [Job]
    /// Moves a job as `action` does (`JobLifecycle`: pause, resume, cancel on its owner's
    /// request), if its state allows. Returns the job as it is afterwards, or nil when there is
    /// no such job.
    func transition(id: String, _ action: JobLifecycle.Action) async throws -> Job?
    /// Multipart upload ids on `key` that an unfinished job (or open client upload) owns.
    func uploadIDsInUse(key: String) async throws -> Set<String>
}

extension JobStore {
    /// Ends the job with no checksum (a failure, or an object whose checksum is unknown).
    public func finish(_ lease: Lease, state: Job.State, etag: String?, error: JobFailure?) async throws {
        try await finish(lease, state: state, etag: etag, error: error, checksum: nil)
    }

    public func renew(_ lease: Lease, leaseMilliseconds: Int64) async throws -> Lease {
        try await renew(lease, leaseMilliseconds: leaseMilliseconds, flowing: nil)
    }

    @discardableResult
    public func insert(_ job: Job) async throws -> Job { try await insert(job, quota: nil) }

    /// One at a time, for stores with no cheaper way.
    public func recordParts(_ parts: [RecordedPart], under lease: Lease) async throws {
        for part in parts { try await recordPart(part, under: lease) }
    }

    /// `start` for a plan without a multipart upload of its own (one part) or with parts
    /// checked by `Content-MD5`.
    public func start(
        _ lease: Lease, uploadID: String?, partsTotal: Int, partSize: Int64, bytesTotal: Int64?,
        sourceETag: String?
    ) async throws {
        try await start(
            lease, uploadID: uploadID, partChecksum: nil, partsTotal: partsTotal, partSize: partSize,
            bytesTotal: bytesTotal, sourceETag: sourceETag)
    }
}

/// A write under a lease that is no longer the job's.
public struct LeaseLost: Error, Equatable, Sendable {
    public let jobID: String
    public init(jobID: String) { self.jobID = jobID }
}

extension JobStore {
    /// `claim` open to every identity.
    public func claim(owner: String, leaseMilliseconds: Int64) async throws -> (Job, Lease)? {
        try await claim(owner: owner, leaseMilliseconds: leaseMilliseconds, excluding: [])
    }
}
