import TransferEngine

/// One change to an identity's job or client upload, as the event feed (`GET /v1/events`)
/// tells it: its number in the identity's sequence, its type (`job.created`, `job.progress`,
/// `job.paused`, `job.resumed`, `job.completed`, `job.failed`, `job.canceled`,
/// `upload.created`, `upload.completed`, `upload.canceled`, `object.deleted`, `object.moved`),
/// when it was recorded, and the job or upload as the change left it, or the object changed.
public struct FeedEvent: Sendable, Equatable {
    /// What changed, as the change left it.
    public enum Subject: Sendable, Equatable {
        case job(Job)
        case upload(ClientUpload)
        case object(ObjectChange)
    }

    /// 1, 2, 3… per identity, with no gaps.
    public let sequence: Int64
    public let type: String
    /// When the change was recorded, milliseconds since 1970.
    public let createdAt: Int64
    public let subject: Subject

    public init(sequence: Int64, type: String, createdAt: Int64, subject: Subject) {
        self.sequence = sequence
        self.type = type
        self.createdAt = createdAt
        self.subject = subject
    }
}

/// Where the event feed is read (PostgreSQL, where triggers write it in the transaction of each
/// change; memory in tests). Each identity's events are numbered 1, 2, 3… with no gaps, and an
/// event becomes visible only after every smaller number of its identity has: a reader that
/// asks for the events after N never misses one that commits later. New events are announced
/// on `JobChanges` under `EventFeedWake.key(owner)`.
public protocol EventFeed: Sendable {
    /// `owner`'s events numbered above `after`, oldest first, at most `limit`.
    func events(owner: String, after: Int64, limit: Int) async throws -> [FeedEvent]
    /// Records `object.deleted` or `object.moved` in `owner`'s feed, numbered and announced as
    /// the database's own events are.
    func record(owner: String, type: String, change: ObjectChange) async throws
    /// The number of `owner`'s newest event (0: none yet).
    func latest(owner: String) async throws -> Int64
    /// Drops events recorded more than `seconds` ago (and the progress marks as old); returns
    /// how many events went.
    @discardableResult
    func sweep(olderThanSeconds seconds: Int) async throws -> Int
}
