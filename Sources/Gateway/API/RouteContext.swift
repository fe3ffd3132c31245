import Auth
import TransferEngine

/// What the routes share, built once by the composition root (or by a test rig over the
/// in-memory twins): who the caller is and what it may touch, the settings, the clock, the
/// metrics, the per-identity limits and, with a job database, its ports. Each route struct holds
/// this and only what is its own.
public struct RouteContext: Sendable {
    /// Who the caller is (bearer tokens).
    public let authenticator: Authenticator
    /// The access levels' rules (`GATEWAY_ALLOW_GUEST_READ`).
    let policy: AccessPolicy
    /// Signs the URLs clients take straight to S3 (presign, client-upload parts).
    public let presigner: any Presigner
    /// Where `/metrics` reads from, and the routes' gauges are registered.
    public let metrics: Metrics
    public let settings: RouteSettings
    /// Whole seconds since 1970 (presigned URLs, tus expiry, download expiry, data links).
    public let now: @Sendable () -> Int
    /// Creations per second, quotas, long polls and data streams per identity.
    let limits: RequestLimits
    /// The job database's ports; nil without one (then only the operations and presign routes
    /// are served).
    public let jobs: JobPorts?
    /// The deployment's instances (`GET /v1/admin/instances`); nil without a database.
    public let instances: (any InstanceDirectory)?

    /// `monotonic`: seconds on a monotonic clock (creation rates). `sharedLimits`: the
    /// deployment's per-identity counts (without, this instance counts alone).
    public init(
        authenticator: Authenticator, presigner: any Presigner, metrics: Metrics, settings: RouteSettings, jobs: JobPorts?,
        now: @escaping @Sendable () -> Int, monotonic: @escaping @Sendable () -> Double,
        sharedLimits: (any SharedLimits)? = nil, instances: (any InstanceDirectory)? = nil
    ) {
        self.instances = instances
        self.authenticator = authenticator
        self.presigner = presigner
        self.metrics = metrics
        self.settings = settings
        self.jobs = jobs
        self.now = now
        policy = AccessPolicy(allowGuestRead: settings.allowGuestRead)
        limits = RequestLimits(
            rate: CreationRate(perSecond: settings.userRate, now: monotonic), quota: settings.quota,
            waits: PerIdentityCount(limit: settings.userMaxWaits),
            streams: PerIdentityCount(limit: settings.userMaxStreams), shared: sharedLimits)
    }

    /// What the engine is told by the settings (part sizes, budgets, the spool's share).
    var engine: EngineSettings { settings.engine }
}
