import Auth
import Foundation
import HTTPServer
import TransferEngine
import Postgres
import S3
import SigV4
import Crypto

/// The composition root: builds the real parts from one `Configuration` and wires them.
public struct GatewayApp: Sendable {
    public let configuration: Configuration
    public let logger: Logger
    public let metrics: Metrics
    public let server: HTTPServer
    /// Runs this instance's share of the jobs (nil without a database).
    public let worker: JobWorker?
    /// Aborts abandoned multipart uploads (nil without a database).
    public let janitor: Janitor?
    /// Wakes long polls when their job changes.
    public let changes: JobChanges
    /// Hears every job change from PostgreSQL (nil without a database).
    public let listener: PostgresListener?

    /// Whole seconds since 1970, read without building a `Date` (presigning asks twice a request).
    static let wallClock: @Sendable () -> Int = { Int(time(nil)) }

    /// Fails with a `Configuration.Invalid` naming the variable when a setting cannot be used.
    public init(configuration: Configuration, logger: Logger) throws(Configuration.Invalid) {
        self.configuration = configuration
        self.logger = logger
        let metrics = Metrics()
        self.metrics = metrics

        let clock = Self.wallClock
        let s3 = try configuration.makeS3Client()
        let publicEndpoint = try configuration.s3PublicEndpointValue()
        let authenticator = Authenticator(verifier: try Self.verifier(configuration),
                                          allowGuestRead: configuration.allowGuestRead, now: clock)
        var checks: [any DependencyCheck] = []
        if let url = configuration.databaseURL { checks.append(PostgresCheck(probe: PostgresProbe(url: url))) }
        checks.append(S3Check(client: s3))

        var router = Router<RouteHandler>()
        OperationsRoutes(readiness: Readiness(checks: checks, timeout: 2), metrics: metrics,
                         openAPI: Self.loadOpenAPI(configuration.openAPIPath))
            .register(in: &router)
        var settings = EngineSettings()
        settings.partSize = Int64(configuration.partSize)
        settings.concurrency = configuration.partConcurrency
        settings.maxConcurrency = configuration.maxPartConcurrency
        settings.retryLimit = configuration.retryLimit
        settings.maxObjectSize = Int64(configuration.maxObjectSize)
        settings.leaseMilliseconds = Int64(configuration.leaseSeconds) * 1000
        settings.tickMilliseconds = min(500, max(100, configuration.leaseSeconds * 1000 / 6))
        settings.timeoutSeconds = configuration.jobTimeout
        settings.memory = ByteBudget(capacity: Int64(configuration.memoryBudget))
        settings.spoolCapacity = Int64(configuration.spoolBudget)
        let objects = S3ObjectStore(client: s3)
        let spool: DirectorySpool
        do {
            spool = try DirectorySpool(directory: configuration.spoolDirectory, budget: Int64(configuration.spoolBudget))
        } catch {
            throw Configuration.Invalid(variable: "GATEWAY_SPOOL_DIR", reason: "\(error)")
        }
        let memory = settings.memory
        metrics.registerGauge(name: "gateway_memory_budget_used_bytes", help: "Bytes of the memory budget held now.") { Int(memory.used) }
        metrics.registerGauge(name: "gateway_spool_used_bytes", help: "Bytes of the spool budget held now.") { Int(spool.usage.used) }
        let limits = RequestLimits(rate: CreationRate(perSecond: configuration.userRate, now: { Self.monotonicSeconds() }),
                                   quota: OwnerQuota(maxActiveJobs: configuration.userMaxActiveJobs,
                                                     maxOpenUploads: configuration.userMaxOpenUploads),
                                   waits: PerIdentityCount(limit: configuration.userMaxWaits))
        let changes = JobChanges()
        self.changes = changes
        let fetcher = HTTPSourceFetcher(fetcher: s3.urlFetcher(allowedHosts: configuration.importAllowHosts))
        if let url = configuration.databaseURL {
            let pool = PostgresPool(url: url, size: configuration.workers + 4)
            let store = PostgresJobStore(pool: pool)
            janitor = Janitor(client: s3, pool: pool, ttlSeconds: configuration.uploadTTL, spool: spool,
                              downloadTTLSeconds: configuration.downloadTTL, stagingPrefix: settings.stagingPrefix)
            listener = PostgresListener(url: url, channel: "gateway_jobs", onNotify: { changes.notify($0) },
                                        onReconnect: { changes.setLive(true); changes.notifyAll() })
            let instance = "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-\(Digest.hex(Digest.randomBytes(3)))"
            let uploads = UploadReceiver(store: store, objects: objects, spool: spool, settings: settings, instance: instance,
                                         observer: JobMetrics(metrics: metrics))
            JobRoutes(authenticator: authenticator, policy: AccessPolicy(allowGuestRead: configuration.allowGuestRead),
                      store: store, objects: objects, spool: spool, uploads: uploads, settings: settings,
                      maxPartConcurrency: configuration.maxPartConcurrency, changes: changes, limits: limits)
                .register(in: &router)
            UploadsRoutes(authenticator: authenticator, policy: AccessPolicy(allowGuestRead: configuration.allowGuestRead),
                          client: s3, pool: pool, publicEndpoint: publicEndpoint, partSize: Int64(configuration.partSize),
                          maxObjectSize: Int64(configuration.maxObjectSize), expiry: configuration.presignExpiry, now: clock,
                          limits: limits)
                .register(in: &router)
            TusRoutes(authenticator: authenticator, policy: AccessPolicy(allowGuestRead: configuration.allowGuestRead),
                      store: store, objects: objects, uploads: uploads, settings: settings,
                      uploadTTLSeconds: configuration.uploadTTL, now: Self.wallClock, limits: limits)
                .register(in: &router)
            let jobWorker = JobWorker(store: store, objects: objects, fetcher: fetcher, spool: spool,
                                      observer: JobMetrics(metrics: metrics), settings: settings, instance: instance,
                                      slots: configuration.workers)
            metrics.registerGauge(name: "gateway_jobs_running", help: "Jobs this instance runs now.") { jobWorker.activeJobs }
            worker = jobWorker
        } else {
            worker = nil
            janitor = nil
            listener = nil
        }
        PresignRoutes(authenticator: authenticator, policy: AccessPolicy(allowGuestRead: configuration.allowGuestRead),
                      client: s3, publicEndpoint: publicEndpoint, defaultExpiry: configuration.presignExpiry,
                      maxExpiry: configuration.presignMaxExpiry, maxObjectSize: Int64(configuration.maxObjectSize),
                      now: clock)
            .register(in: &router)

        let prefix = Digest.hex(Digest.randomBytes(3)) + "-"
        let responder = GatewayResponder(router: router, cors: CORS(origins: configuration.corsOrigins),
                                         logger: logger, metrics: metrics, instancePrefix: prefix)
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxConnections = configuration.maxConnections
        http.maxConnectionsPerClient = configuration.maxConnectionsPerClient
        http.trustedProxies = configuration.trustedProxies.compactMap(AddressBlock.init)
        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: http, responder: responder)
        } catch {
            throw Configuration.Invalid(variable: "GATEWAY_HOST", reason: "\(error)")
        }
        self.server = server
        metrics.registerGauge(name: "gateway_http_open_connections", help: "Open HTTP connections.") {
            server.openConnections
        }
    }

    /// Starts the background parts (the job worker, the change listener).
    public func startBackground() {
        listener?.start()
        worker?.start()
    }

    /// SIGTERM: jobs handed back first (another instance takes them at once), then waiting
    /// requests answered and requests in flight finished for up to `grace` seconds.
    public func shutdown(grace: Double) async {
        await worker?.stop()
        await server.shutdown(grace: grace) { [changes] in changes.close() }
        listener?.stop()
    }

    /// Seconds on the monotonic clock (for rates).
    static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Applies the missing schema migrations; returns the versions applied now.
    public static func migrate(databaseURL: String) async throws -> [Int] {
        try await Schema.migrations.apply(using: PostgresPool(url: databaseURL, size: 1))
    }

    /// The JWT keys: the HS256 secret and/or the PEM public key file (RS256 or ES256).
    static func verifier(_ configuration: Configuration) throws(Configuration.Invalid) -> JWTVerifier {
        var keys: [JWTVerifier.Key] = []
        if let secret = configuration.jwtSecret {
            guard secret.utf8.count >= 32 else {
                throw Configuration.Invalid(variable: "GATEWAY_JWT_SECRET", reason: "must be at least 32 bytes")
            }
            keys.append(.hmac(Array(secret.utf8)))
        }
        if let path = configuration.jwtPublicKeyFile {
            guard let pem = FileManager.default.contents(atPath: path) else {
                throw Configuration.Invalid(variable: "GATEWAY_JWT_PUBLIC_KEY_FILE", reason: "cannot read '\(path)'")
            }
            do {
                keys.append(.publicKey(try PublicKey(pem: Array(pem))))
            } catch {
                throw Configuration.Invalid(variable: "GATEWAY_JWT_PUBLIC_KEY_FILE", reason: "\(error)")
            }
        }
        return JWTVerifier(keys: keys, issuer: configuration.jwtIssuer, audience: configuration.jwtAudience,
                           cache: VerifiedTokenCache())
    }

    /// The OpenAPI document: `GATEWAY_OPENAPI_PATH`, else `openapi.yaml` in the working folder,
    /// beside the executable's package root, or where the container image puts it.
    static func loadOpenAPI(_ explicit: String?) -> [UInt8]? {
        var candidates: [String] = []
        if let explicit { candidates.append(explicit) }
        candidates.append("openapi.yaml")
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("../../openapi.yaml").path)
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("../../../openapi.yaml").path)
        candidates.append("/usr/share/transfer-gateway/openapi.yaml")
        for path in candidates {
            if let data = FileManager.default.contents(atPath: path) { return Array(data) }
        }
        return nil
    }
}
