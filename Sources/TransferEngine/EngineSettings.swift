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
    /// A job's running-time limit per run, unless it sets `timeoutSeconds`.
    public var timeoutSeconds = 3000

    public init() {}
}
