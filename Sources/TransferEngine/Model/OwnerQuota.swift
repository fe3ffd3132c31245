/// What one identity may have at once (`GATEWAY_USER_MAX_ACTIVE_JOBS`,
/// `GATEWAY_USER_MAX_OPEN_UPLOADS`): checked by the store in the same transaction as the insert,
/// so requests racing each other cannot pass it together.
public struct OwnerQuota: Sendable, Equatable {
    /// Jobs pending, queued, running or paused.
    public var maxActiveJobs: Int
    /// Open client-driven uploads plus upload jobs not yet ended (tus uploads among them).
    public var maxOpenUploads: Int

    public init(maxActiveJobs: Int, maxOpenUploads: Int) {
        self.maxActiveJobs = maxActiveJobs
        self.maxOpenUploads = maxOpenUploads
    }
}

/// An insert refused by an `OwnerQuota`.
public struct QuotaExceeded: Error, Equatable, Sendable {
    public enum Limit: String, Sendable {
        case activeJobs = "active jobs"
        case openUploads = "open uploads"
    }

    public let limit: Limit
    public let maximum: Int

    public init(limit: Limit, maximum: Int) {
        self.limit = limit
        self.maximum = maximum
    }
}
