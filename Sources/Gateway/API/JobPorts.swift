import TransferEngine

/// The ports behind the job, upload, tus and object routes: the job database's stores, S3, the
/// upload receiver and the change notices. Absent from a `RouteContext` without a job database.
public struct JobPorts: Sendable {
    /// Jobs, upload jobs' leases and tails.
    public let store: any UploadJobStore
    /// The bucket.
    public let objects: any ObjectStore
    /// Streams upload jobs' bytes (jobs data routes and tus).
    public let receiver: UploadReceiver
    /// Client-driven multipart uploads (`/v1/uploads`).
    public let clientUploads: any ClientUploadStore
    /// Wakes long polls and event streams when their job changes.
    public let changes: JobChanges
    /// Refuses imports of addresses the fetcher would refuse, at creation (absent: no early check).
    public let sourceCheck: (any SourceAddressCheck)?
    /// Every identity's changes, numbered (`GET /v1/events`; absent: no feed is served).
    public let events: (any EventFeed)?
    /// Whole-object checksums of the objects the gateway wrote (absent: none is reported).
    public let checksums: (any ObjectChecksumStore)?
    /// `Idempotency-Key` replays of the create routes, over the idempotency store.
    let idempotency: Idempotency
    /// Cancel, tus termination and client-upload abort, with their cleanup (the engine's one way).
    let cancellation: Cancellation

    public init(
        store: any UploadJobStore, objects: any ObjectStore, receiver: UploadReceiver, clientUploads: any ClientUploadStore,
        changes: JobChanges, idempotency: any IdempotencyStore, sourceCheck: (any SourceAddressCheck)? = nil,
        events: (any EventFeed)? = nil, checksums: (any ObjectChecksumStore)? = nil
    ) {
        self.checksums = checksums
        self.store = store
        self.objects = objects
        self.receiver = receiver
        self.clientUploads = clientUploads
        self.changes = changes
        self.sourceCheck = sourceCheck
        self.events = events
        self.idempotency = Idempotency(store: idempotency)
        cancellation = Cancellation(receiver: receiver)
    }
}
