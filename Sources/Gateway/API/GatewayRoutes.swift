import Auth
import HTTPServer
import TransferEngine

/// Every route of the API over its ports: the composition root fills the ports with the real
/// adapters (PostgreSQL, S3, the disk), the route tests with the in-memory twins. The routes
/// know nothing of SQL, signing or HTTP clients.
public struct GatewayRoutes: Sendable {
    /// The ports of the job and upload routes (absent without a job database).
    public struct Jobs: Sendable {
        public var store: any UploadStore
        public var objects: any ObjectStore
        public var spool: any Spool
        public var receiver: UploadReceiver
        public var clientUploads: any ClientUploadStore
        public var changes: JobChanges
        public var idempotency: any IdempotencyStore
        /// Refuses imports of addresses the fetcher would refuse, at creation (absent: no early check).
        public var sourceCheck: (any SourceAddressCheck)?

        public init(store: any UploadStore, objects: any ObjectStore, spool: any Spool, receiver: UploadReceiver,
                    clientUploads: any ClientUploadStore, changes: JobChanges, idempotency: any IdempotencyStore,
                    sourceCheck: (any SourceAddressCheck)? = nil) {
            self.store = store
            self.objects = objects
            self.spool = spool
            self.receiver = receiver
            self.clientUploads = clientUploads
            self.changes = changes
            self.idempotency = idempotency
            self.sourceCheck = sourceCheck
        }
    }

    /// What the routes are told by the settings.
    public struct Settings: Sendable {
        public var engine = EngineSettings()
        public var allowGuestRead = false
        public var presignExpiry = 3000
        public var presignMaxExpiry = 604_800
        public var uploadTTL = 86_400
        public var quota = OwnerQuota(maxActiveJobs: 16, maxOpenUploads: 64)
        public var userRate = 10.0
        public var userMaxWaits = 32
        /// Data streams open at once per job owner (`GATEWAY_USER_MAX_STREAMS`).
        public var userMaxStreams = 8
        /// The key of `dataUrl` signatures (`GATEWAY_LINK_SECRET`); nil: no links.
        public var linkSecret: [UInt8]?
        public var downloadTTL = 3600

        public init() {}
    }

    public let authenticator: Authenticator
    public let presigner: any Presigner
    public let checks: [any DependencyCheck]
    public let metrics: Metrics
    public let openAPI: [UInt8]?
    public let jobs: Jobs?
    public let settings: Settings
    /// Whole seconds since 1970 (presigned URLs, tus expiry).
    public let now: @Sendable () -> Int
    /// Seconds on a monotonic clock (creation rates).
    public let monotonic: @Sendable () -> Double

    public init(authenticator: Authenticator, presigner: any Presigner, checks: [any DependencyCheck], metrics: Metrics,
                openAPI: [UInt8]?, jobs: Jobs?, settings: Settings, now: @escaping @Sendable () -> Int,
                monotonic: @escaping @Sendable () -> Double) {
        self.authenticator = authenticator
        self.presigner = presigner
        self.checks = checks
        self.metrics = metrics
        self.openAPI = openAPI
        self.jobs = jobs
        self.settings = settings
        self.now = now
        self.monotonic = monotonic
    }

    /// Every route, registered.
    public func router() -> Router<GatewayRoute> {
        var router = Router<GatewayRoute>()
        let policy = AccessPolicy(allowGuestRead: settings.allowGuestRead)
        let engine = settings.engine
        OperationsRoutes(readiness: Readiness(checks: checks, timeout: 2), metrics: metrics, openAPI: openAPI).register(in: &router)
        PresignRoutes(authenticator: authenticator, policy: policy, presigner: presigner, defaultExpiry: settings.presignExpiry,
                      maxExpiry: settings.presignMaxExpiry, maxObjectSize: engine.maxObjectSize, now: now)
            .register(in: &router)
        guard let jobs else { return router }
        let waits = PerIdentityCount(limit: settings.userMaxWaits)
        metrics.registerGauge(name: "gateway_waits_open", help: "Long polls and event streams held now.") { waits.total }
        let idempotency = Idempotency(store: jobs.idempotency)
        let streams = PerIdentityCount(limit: settings.userMaxStreams)
        metrics.registerGauge(name: "gateway_data_streams_open", help: "Streams of job data held now.") { streams.total }
        let limits = RequestLimits(rate: CreationRate(perSecond: settings.userRate, now: monotonic), quota: settings.quota,
                                   waits: waits, streams: streams)
        JobRoutes(authenticator: authenticator, policy: policy, store: jobs.store, objects: jobs.objects, spool: jobs.spool,
                  uploads: jobs.receiver, settings: engine, maxPartConcurrency: engine.maxConcurrency, changes: jobs.changes,
                  limits: limits, links: settings.linkSecret.map { DataLinks(secret: $0, now: now) }, downloadTTL: settings.downloadTTL,
                  now: now, idempotency: idempotency, sourceCheck: jobs.sourceCheck)
            .register(in: &router)
        ObjectRoutes(authenticator: authenticator, policy: policy, objects: jobs.objects).register(in: &router)
        UploadsRoutes(authenticator: authenticator, policy: policy, store: jobs.clientUploads, objects: jobs.objects,
                      presigner: presigner, partSize: engine.partSize, maxObjectSize: engine.maxObjectSize,
                      expiry: settings.presignExpiry, now: now, limits: limits, idempotency: idempotency)
            .register(in: &router)
        TusRoutes(authenticator: authenticator, policy: policy, store: jobs.store, objects: jobs.objects, uploads: jobs.receiver,
                  settings: engine, uploadTTLSeconds: settings.uploadTTL, now: now, limits: limits, idempotency: idempotency)
            .register(in: &router)
        return router
    }
}
