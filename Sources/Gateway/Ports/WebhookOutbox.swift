/// An event waiting in the outbox: a job or a client-driven upload that reached a final state.
public struct WebhookEvent: Sendable, Equatable {
    public let id: String
    /// `job.completed`, `job.failed`, `job.canceled`, `upload.completed`, `upload.canceled`.
    public let type: String
    /// The job's or the upload's id.
    public let subjectID: String
    /// Delivery attempts so far, this one included.
    public let attempts: Int
    /// When the change was made, Unix seconds.
    public let createdAt: Double

    public init(id: String, type: String, subjectID: String, attempts: Int, createdAt: Double) {
        self.id = id
        self.type = type
        self.subjectID = subjectID
        self.attempts = attempts
        self.createdAt = createdAt
    }

    public var isJobEvent: Bool { type.hasPrefix("job.") }
}

/// The events recorded with the state changes they tell of (see the `webhook_events` table).
/// Any instance may deliver any event; a claim hides an event from the others for a while, so
/// each is sent by one instance at a time, and again only if that one did not settle it. An
/// outcome counts only for the claim it answers (its `attempts`): one that comes after the
/// lease ran out and another instance claimed the event changes nothing.
public protocol WebhookOutbox: Sendable {
    /// Up to `limit` events due now, each hidden from other claims for `leaseSeconds`.
    func claimDue(limit: Int, leaseSeconds: Int) async throws -> [WebhookEvent]
    /// The receiver acknowledged it.
    func delivered(_ event: WebhookEvent) async throws
    /// Try again `seconds` from now.
    func retry(_ event: WebhookEvent, afterSeconds seconds: Double, error: String) async throws
    /// Given up: kept as failed.
    func failed(_ event: WebhookEvent, error: String) async throws
    /// Events given up, for `/metrics`.
    func failedCount() async throws -> Int
    /// Delivered events older than `seconds` are dropped (a few at a time).
    func sweepDelivered(olderThanSeconds seconds: Int) async throws
}

/// Sends one event to the operator's receiver; answers the HTTP status (0: no answer).
public protocol WebhookPoster: Sendable {
    func post(body: [UInt8], headers: [(String, String)]) async -> WebhookPostResult
}

public enum WebhookPostResult: Sendable, Equatable {
    case answered(status: Int)
    case unreachable(String)
}
