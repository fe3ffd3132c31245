/// What `upload` jobs need of the job store beyond `JobStore`: the request streaming the bytes
/// holds the job's lease (so two requests, on any instances, never write one upload at once),
/// and the bytes past the last full part (the tail) are kept in the store, so the next request,
/// on any instance, continues exactly where the last one stopped.
public protocol UploadStore: JobStore {
    /// Takes the lease of upload job `id` if it waits for bytes (`pending`), or if the request
    /// that held it died with its instance (lease lapsed), or if `owner` holds it already: the
    /// caller must know that no request of its own streams it (an instance's own stale lease,
    /// left by a request a database outage cut). Returns the job, the lease and the stored tail;
    /// nil when another instance holds it or it is not waiting for bytes.
    func claimUpload(id: String, owner: String, leaseMilliseconds: Int64) async throws -> UploadClaim?
    /// Records part `part` (parts are recorded in order) and empties the tail: the committed
    /// bytes are then exactly the recorded parts'.
    func recordUploadPart(_ part: RecordedPart, under lease: Lease) async throws
    /// Keeps `tail` (fewer bytes than a part) after the recorded parts; committed bytes become
    /// the parts' plus the tail's.
    func saveUploadTail(_ tail: [UInt8], under lease: Lease) async throws
    /// Back to `pending`: the upload waits for its next request.
    func releaseUpload(_ lease: Lease) async throws
}

public struct UploadClaim: Sendable {
    public let job: Job
    public let lease: Lease
    public let tail: [UInt8]

    public init(job: Job, lease: Lease, tail: [UInt8]) {
        self.job = job
        self.lease = lease
        self.tail = tail
    }
}

/// Where an upload request's bytes come from (the HTTP body, in the gateway). `next` throws
/// when the connection broke.
public protocol ByteSource: Sendable {
    func next() async throws -> ArraySlice<UInt8>?
}
