import Foundation
import TransferEngine

/// An upload job the janitor expired: its S3 upload and staged tail are to be removed.
public struct ExpiredUpload: Sendable, Equatable {
    public let objectKey: String
    public let uploadID: String?
    public let tail: [TailSegment]

    public init(objectKey: String, uploadID: String?, tail: [TailSegment]) {
        self.objectKey = objectKey
        self.uploadID = uploadID
        self.tail = tail
    }
}

/// What the janitor asks of the job database, no more.
public protocol MaintenanceStore: Sendable {
    /// Upload jobs under `prefixes` that received no byte since `cutoff` (seconds since 1970)
    /// and that nobody streams (waiting, paused, or their holder's lease lapsed): failed with
    /// `upload_expired`, in the lifecycle's one transition for it. Returns what they held.
    func expireIdleUploads(before cutoff: Double, prefixes: [String]) async throws -> [ExpiredUpload]
    /// Failed jobs under `prefixes` whose multipart upload was kept for a retry
    /// (`error.retryable`) and that failed before `cutoff` (seconds since 1970): no longer
    /// retryable, their upload id forgotten. Returns the uploads, to be aborted.
    func releaseRetainedUploads(before cutoff: Double, prefixes: [String]) async throws -> [ExpiredUpload]
    /// Ids of the jobs queued or running now (their spool files stay).
    func activeJobIDs() async throws -> Set<String>
    /// Of `ids`, the jobs this database knows (a bucket may be shared with other deployments,
    /// whose jobs it does not know), each with whether it ended and the staged tail pieces it
    /// lists.
    func stagedTails(of ids: [String]) async throws -> [String: StagedTails]
}

/// What the janitor asks of the spool: its files, and their removal.
public protocol SpoolMaintenance: Sendable {
    /// Every file on the spool now.
    func files() -> [SpoolEntry]
    /// Removes a file (and gives its reserved bytes back); false when it was not there.
    func remove(fileNamed name: String) -> Bool
}

/// One file on the spool.
public struct SpoolEntry: Sendable, Equatable {
    public var name: String
    public var jobID: String
    /// When it was last written, in Unix seconds.
    public var modified: Double

    public init(name: String, jobID: String, modified: Double) {
        self.name = name
        self.jobID = jobID
        self.modified = modified
    }
}

/// A job's staged tail pieces as its row lists them.
public struct StagedTails: Sendable, Equatable {
    public var ended: Bool
    public var keys: Set<String>

    public init(ended: Bool, keys: Set<String>) {
        self.ended = ended
        self.keys = keys
    }
}

/// What the janitor asks of the bucket, no more.
public protocol BucketMaintenance: Sendable {
    /// Aborts, taking an upload S3 no longer has as already done.
    func abortIfOpen(key: String, uploadID: String) async throws
    /// The unfinished multipart uploads of exactly `key`, with when each began (when S3 says).
    func uploads(of key: String) async throws -> [(id: String, initiated: Date?)]
    /// When the newest part of an upload landed, if S3 says and there is one.
    func newestPart(key: String, uploadID: String) async throws -> Date?
    /// The objects under `prefix`, with when each was last written.
    func objects(under prefix: String) async throws -> [(key: String, modified: Date?)]
    func delete(key: String) async throws
}
