/// Defaults and limits the engine applies to every job (from the gateway's configuration).
public struct EngineSettings: Sendable {
    public var partSize: Int64 = PartPlan.minimumPartSize
    public var concurrency = 5
    public var maxConcurrency = 32
    public var retryLimit = 3
    public var maxObjectSize: Int64 = PartPlan.maximumObjectSize
    public var leaseMilliseconds: Int64 = 30_000
    /// How often a running job renews its lease and looks for pause or cancel.
    public var tickMilliseconds = 500
    public var backoff = Backoff()
    /// The jitter source of retries' backoff, uniform in [0, 1) (fixed in tests).
    public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
    /// A job's running-time limit per run, unless it sets `timeoutSeconds`; nil: none
    /// (`GATEWAY_JOB_TIMEOUT`).
    public var timeoutSeconds: Int? = nil
    /// How long a running job may move no byte before it fails `stalled`, unless it sets
    /// `stallTimeoutSeconds` (`GATEWAY_STALL_TIMEOUT`).
    public var stallTimeoutSeconds = 300
    /// How long a job waiting out failures that may pass keeps trying with no progress before it
    /// fails (`GATEWAY_RETRY_WINDOW`).
    public var retryWindowSeconds = 86_400
    /// The waits between runs of a job sent back by a failure that may pass: from 10 s,
    /// doubling to 5 minutes (`JobBackoff`).
    public var jobBackoff = JobBackoff()
    /// Times a job's holder may die before the job fails with `crash_loop` instead of being run
    /// again (a poison job would otherwise take every instance down in turn).
    public var crashLimit = 3
    /// What every in-memory transfer buffer of this instance draws from (`GATEWAY_MEMORY_BUDGET`).
    public var memory = ByteBudget(capacity: 256 << 20)
    /// What one transfer in flight holds in memory while it moves a part (the HTTP client's
    /// send and receive buffers, a block read from the spool): reserved from `memory`.
    public var transferBufferBytes: Int64 = 1 << 20
    /// The most of the spool one identity may hold (`GATEWAY_USER_SPOOL_SHARE` of
    /// `GATEWAY_SPOOL_BUDGET`): no part may be larger, or it could never be spooled.
    public var spoolCapacity: Int64 = .max
    /// What one upload request holds in memory beyond the HTTP server's bounded socket buffers:
    /// the piece being written to the spool and the checksum state. Reserved from `memory`.
    /// Small, so thousands of slow uploads fit in the budget.
    public var requestBufferBytes: Int64 = 64 * 1024
    /// How much more of the spool an upload's tail file reserves each time its bytes reach what
    /// it holds: reservations grow with the bytes actually written, so a client that sends a
    /// little and stalls holds a chunk, not a part.
    public var spoolChunkBytes: Int64 = 1 << 20
    /// How long a request that brings bytes waits for room (memory or spool) before it is
    /// answered 503 with `Retry-After` instead.
    public var roomWaitMilliseconds = 5_000
    /// Where an upload's bytes past its last full part are kept between requests, so any
    /// instance takes the next one: objects under this prefix of the bucket, which no client key
    /// can name (client keys start with an access level).
    public var stagingPrefix = "transfer-gateway-staging/"
    /// Tail pieces an upload keeps before they are merged into one object.
    public var maxTailSegments = 16
    /// How long a finished part may wait to be recorded with others while parts are in flight.
    public var partSaveMilliseconds = 250
    /// How new multipart uploads check their parts (`PartChecksum`).
    public var partChecksum: PartChecksum = .crc32c

    public init() {}
}

extension EngineSettings {
    /// Runs one transfer of bytes (a part, an object, a staged tail) with its buffers reserved
    /// from the memory budget first: however many requests and jobs run, their transfers
    /// together stay within `GATEWAY_MEMORY_BUDGET`.
    /// The buffers count against `owner`'s share of the budget.
    func transferring<T: Sendable>(for owner: String?, _ body: () async throws -> T) async throws -> T {
        let held = try await memory.reserve(transferBufferBytes, owner: owner)
        defer { held.release() }
        return try await body()
    }
}
