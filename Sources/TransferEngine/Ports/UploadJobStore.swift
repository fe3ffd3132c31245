/// What `upload` jobs need of the job store beyond `JobStore`: the request streaming the bytes
/// holds the job's lease (so two requests, on any instances, never write one upload at once),
/// and the bytes past the last full part (the tail) are kept as staged objects the store lists,
/// so the next request, on any instance, continues exactly where the last one stopped.
public protocol UploadJobStore: JobStore {
    /// Takes the lease of upload job `id` if it waits for bytes (`pending`), or if the request
    /// that held it died with its instance (lease lapsed), or if `owner` holds it already: the
    /// caller must know that no request of its own streams it (an instance's own stale lease,
    /// left by a request a database outage cut). Returns the job, the lease and the tail's
    /// pieces; nil when another instance holds it or it is not waiting for bytes.
    func claimUpload(id: String, owner: String, leaseMilliseconds: Int64) async throws -> UploadClaim?
    /// Records part `part` (parts are recorded in order) and forgets the tail: the committed
    /// bytes are then exactly the recorded parts'. Returns the tail pieces forgotten (their
    /// objects are the caller's to delete).
    func recordUploadPart(_ part: RecordedPart, under lease: Lease) async throws -> [TailSegment]
    /// `recordUploadPart` for several parts in order, in one transaction.
    func recordUploadParts(_ parts: [RecordedPart], under lease: Lease) async throws -> [TailSegment]
    /// Replaces the tail's pieces (fewer bytes than a part, after the recorded parts); committed
    /// bytes become the parts' plus the tail's. Returns the pieces no longer listed.
    func saveUploadTail(_ segments: [TailSegment], under lease: Lease) async throws -> [TailSegment]
    /// Back to `pending`: the upload waits for its next request.
    func releaseUpload(_ lease: Lease) async throws
    /// Upload jobs with every byte committed whose completion began but whose request died
    /// with its instance (lease lapsed): no client has bytes left to send them, so the gateway
    /// finishes them itself (`UploadFinisher`). At most `limit` ids.
    func strandedCompletions(limit: Int) async throws -> [String]
}

/// One piece of an upload's tail: `size` bytes at object offset `offset`, kept in the staged
/// object `key`.
public struct TailSegment: Codable, Sendable, Equatable {
    public let offset: Int64
    public let size: Int64
    public let key: String

    public init(offset: Int64, size: Int64, key: String) {
        self.offset = offset
        self.size = size
        self.key = key
    }
}

public struct UploadClaim: Sendable {
    public let job: Job
    public let lease: Lease
    /// The tail's pieces in order, right after the recorded parts.
    public let tail: [TailSegment]

    public init(job: Job, lease: Lease, tail: [TailSegment]) {
        self.job = job
        self.lease = lease
        self.tail = tail
    }
}

/// Where an upload request's bytes come from (the HTTP body, in the gateway). `next` throws
/// when the connection broke.
public protocol ByteSource: Sendable {
    func next() async throws -> ArraySlice<UInt8>?
    /// A chunk `next` gave, handed back once its reader is done with it: a source may carry a
    /// later chunk in its memory (its pages already there) instead of a new array's. The reader
    /// keeps no other reference to it; one it keeps only costs the reuse (the array is copied on
    /// write, never shared).
    func giveBack(_ chunk: consuming ArraySlice<UInt8>)
}

extension ByteSource {
    /// Nothing is reused.
    public func giveBack(_ chunk: consuming ArraySlice<UInt8>) {}
}

extension UploadJobStore {
    /// One at a time, for stores with no cheaper way.
    public func recordUploadParts(_ parts: [RecordedPart], under lease: Lease) async throws -> [TailSegment] {
        var forgotten: [TailSegment] = []
        for part in parts { forgotten += try await recordUploadPart(part, under: lease) }
        return forgotten
    }
}
