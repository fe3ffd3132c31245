import Adapters
import Auth
import Crypto
import Foundation
import Gateway
import HTTPServer
import Postgres
import S3
import TransferEngine

/// The composition root: builds the real parts from one `Configuration` and wires the adapters
/// (PostgreSQL, S3, the disk) into the ports of the engine and the routes.
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
    /// Keeps the identity provider's key set fresh (nil without `GATEWAY_JWT_JWKS_URL`).
    public let keySetRefresher: KeySetRefresher?
    /// Sends job and upload events to the operator's receiver (nil without `GATEWAY_WEBHOOK_URL`).
    public let webhooks: WebhookDelivery?
    /// Keeps the S3 credentials fresh when they come from STS, the container endpoint or IMDS.
    public let credentialsRefresher: CredentialsRefresher
    /// This instance among the deployment's (heartbeat, shared per-identity counts; nil without
    /// a database).
    public let fleet: PostgresFleet?
    /// Finishes upload jobs whose last request died after every byte was in (nil without a database).
    public let uploadFinisher: UploadFinisher?

    /// What the database holds for every instance of a deployment, read before the app is built
    /// (`prepareDatabase`).
    public struct Deployment: Sendable {
        /// The link secret made by `migrate`, used when GATEWAY_LINK_SECRET is not set.
        public var linkSecret: String?
        /// The database's schema version.
        public var schemaVersion: Int

        public init(linkSecret: String? = nil, schemaVersion: Int = Schema.latestVersion) {
            self.linkSecret = linkSecret
            self.schemaVersion = schemaVersion
        }
    }

    /// Whole seconds since 1970, read without building a `Date` (presigning asks twice a request).
    static let wallClock: @Sendable () -> Int = { Int(time(nil)) }

    /// Fails with a `Configuration.Invalid` naming the variable when a setting cannot be used.
    /// `deployment`: what `prepareDatabase` read (without, links are signed with GATEWAY_LINK_SECRET
    /// or a key of this instance alone).
    public init(configuration: Configuration, logger: Logger, deployment: Deployment = Deployment()) throws(Configuration.Invalid) {
        self.configuration = configuration
        self.logger = logger
        let metrics = Metrics()
        self.metrics = metrics
        let s3 = try configuration.makeS3Client()
        credentialsRefresher = CredentialsRefresher(
            client: s3, source: configuration.s3CredentialsSource ?? .fixed(configuration.s3Credentials), logger: logger)
        let keySet = configuration.jwtJWKSURL.map { _ in KeySet() }
        let authenticator = Authenticator(
            verifier: try Self.verifier(configuration, keySet: keySet),
            allowGuestRead: configuration.allowGuestRead, now: Self.wallClock)
        if let keySet, let url = configuration.jwtJWKSURL {
            keySetRefresher = KeySetRefresher(
                keySet: keySet, url: url, fetcher: s3.urlFetcher(allowedHosts: [Self.authority(of: url)]),
                logger: logger, now: Self.wallClock)
        } else {
            keySetRefresher = nil
        }
        let linkSecret = configuration.linkSecret ?? deployment.linkSecret ?? Digest.hex(Digest.randomBytes(32))
        let settings = try Self.settings(configuration, linkSecret: linkSecret)
        // Sessions of an instance with a receiver record events (the trigger of migration 7).
        let pool = configuration.databaseURL.map { url in
            PostgresPool(
                url: url, size: configuration.workers + 4,
                settings: configuration.webhookURL == nil ? [] : [("gateway.webhooks", "on")])
        }
        let keyLocks: any KeyLocks = pool.map { PostgresKeyLocks(pool: $0) } ?? ProcessKeyLocks()
        let objects = S3ObjectStore(client: s3, checksum: configuration.s3Checksum, keyLocks: keyLocks)
        let spool: DirectorySpool
        do {
            spool = try DirectorySpool(
                directory: configuration.spoolDirectory, budget: Int64(configuration.spoolBudget),
                ownerShare: configuration.userSpoolShare)
        } catch {
            throw Configuration.Invalid(variable: "GATEWAY_SPOOL_DIR", reason: "\(error)")
        }
        let memory = settings.engine.memory
        metrics.registerGauge(name: "gateway_memory_budget_used_bytes", help: "Bytes of the memory budget held now.") { Int(memory.used) }
        metrics.registerGauge(name: "gateway_spool_used_bytes", help: "Bytes of the spool budget held now.") { Int(spool.usage.used) }
        let changes = JobChanges()
        self.changes = changes
        var checks: [any DependencyCheck] = []
        var jobs: JobPorts?
        if let url = configuration.databaseURL, let pool {
            checks.append(PostgresCheck(probe: PostgresProbe(url: url)))
            let store = PostgresJobStore(pool: pool)
            let checksums = PostgresObjectChecksums(pool: pool)
            let clientUploads = PostgresClientUploadStore(pool: pool)
            let feed = PostgresEventFeed(pool: pool)
            janitor = Janitor(
                jobs: PostgresMaintenanceStore(pool: pool), clientUploads: clientUploads, jobStore: store,
                bucket: S3BucketMaintenance(client: s3), ttlSeconds: configuration.uploadTTL, spool: spool,
                downloadTTLSeconds: configuration.downloadTTL, stagingPrefix: settings.engine.stagingPrefix, events: feed)
            listener = PostgresListener(
                url: url, channel: "gateway_jobs", onNotify: { changes.notify($0) },
                onReconnect: {
                    changes.setLive(true); changes.notifyAll()
                })
            let instance =
                "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-\(Digest.hex(Digest.randomBytes(3)))"
            let digests = configuration.sharedSettingsDigests(linkSecret: linkSecret)
            let now = Self.wallClock()
            fleet = PostgresFleet(
                pool: pool,
                current: InstanceRecord(
                    id: instance, host: ProcessInfo.processInfo.hostName, version: CommandHelp.version,
                    schemaVersion: deployment.schemaVersion, settingsHash: Configuration.settingsHash(digests), settings: digests,
                    startedAt: now, heartbeatAt: now, live: true))
            let receiver = UploadReceiver(
                store: store, objects: objects, spool: spool, settings: settings.engine, instance: instance,
                observer: JobMetrics(metrics: metrics), signals: changes)
            uploadFinisher = UploadFinisher(store: store, receiver: receiver)
            jobs = JobPorts(
                store: store, objects: objects, receiver: receiver, clientUploads: clientUploads, changes: changes,
                idempotency: PostgresIdempotencyStore(pool: pool),
                sourceCheck: URLSourceAddressCheck(fetcher: s3.urlFetcher(allowedHosts: configuration.importAllowHosts)),
                events: feed, checksums: checksums)
            let fetcher = HTTPSourceFetcher(fetcher: s3.urlFetcher(allowedHosts: configuration.importAllowHosts))
            let jobWorker = JobWorker(
                store: store, objects: objects, fetcher: fetcher, spool: spool,
                observer: JobMetrics(metrics: metrics), settings: settings.engine, instance: instance,
                slots: configuration.workers, checksums: checksums, signals: changes)
            metrics.registerGauge(name: "gateway_jobs_running", help: "Jobs this instance runs now.") { jobWorker.activeJobs }
            worker = jobWorker
            if let receiver = configuration.webhookURL, let secret = configuration.webhookSecret {
                var delivery = WebhookDelivery.Settings()
                delivery.secret = Array(secret.utf8)
                let poster = HTTPWebhookPoster(
                    fetcher: s3.urlFetcher(allowedHosts: configuration.importAllowHosts, reach: .anyButLinkLocal),
                    url: receiver)
                webhooks = WebhookDelivery(
                    outbox: PostgresWebhookOutbox(pool: pool), poster: poster,
                    render: WebhookEventData.renderer(jobs: store, clientUploads: clientUploads), changes: changes,
                    settings: delivery, now: { Date().timeIntervalSince1970 }, logger: logger, metrics: metrics)
            } else {
                webhooks = nil
            }
        } else {
            worker = nil
            janitor = nil
            listener = nil
            webhooks = nil
            fleet = nil
            uploadFinisher = nil
        }
        if let fleet { checks.append(FleetCheck(fleet: fleet)) }
        checks.append(CredentialsCheck(refresher: credentialsRefresher))
        checks.append(S3Check(client: s3))
        if let keySet { checks.append(KeySetCheck(keySet: keySet)) }
        // What every route shares, built once.
        let context = RouteContext(
            authenticator: authenticator,
            presigner: S3Presigner(client: s3, publicEndpoint: try configuration.s3PublicEndpointValue()),
            metrics: metrics, settings: settings, jobs: jobs, now: Self.wallClock, monotonic: Self.monotonicSeconds,
            sharedLimits: fleet, instances: fleet)
        let routes = GatewayRoutes(context: context, checks: checks, openAPI: Self.loadOpenAPI(configuration.openAPIPath))
        var beforeRoute: (@Sendable (HTTPRequest) async -> Void)?
        if keySet != nil { beforeRoute = { request in await authenticator.prepare(request) } }
        let responder = GatewayResponder(
            router: routes.router(), cors: CORS(origins: configuration.corsOrigins, allowCredentials: configuration.corsAllowCredentials),
            logger: logger,
            metrics: metrics, instancePrefix: Digest.hex(Digest.randomBytes(3)) + "-",
            isUnavailable: { ($0 as? PostgresError)?.meansUnavailable ?? false },
            beforeRoute: beforeRoute)
        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: Self.http(configuration), responder: responder)
        } catch {
            throw Configuration.Invalid(variable: "GATEWAY_HOST", reason: "\(error)")
        }
        self.server = server
        metrics.registerGauge(name: "gateway_http_open_connections", help: "Open HTTP connections.") { server.openConnections }
    }

    /// What the engine and the routes are told by the settings.
    static func settings(_ configuration: Configuration, linkSecret: String) throws(Configuration.Invalid) -> RouteSettings {
        var engine = EngineSettings()
        engine.partSize = Int64(configuration.partSize)
        engine.concurrency = configuration.partConcurrency
        engine.maxConcurrency = configuration.maxPartConcurrency
        engine.retryLimit = configuration.retryLimit
        engine.maxObjectSize = Int64(configuration.maxObjectSize)
        engine.leaseMilliseconds = Int64(configuration.leaseSeconds) * 1000
        engine.tickMilliseconds = min(500, max(100, configuration.leaseSeconds * 1000 / 6))
        engine.timeoutSeconds = configuration.jobTimeout
        engine.stallTimeoutSeconds = configuration.stallTimeout
        engine.retryWindowSeconds = configuration.retryWindow
        engine.memory = ByteBudget(capacity: Int64(configuration.memoryBudget), ownerShare: configuration.userMemoryShare)
        // No part may be larger than what one identity may hold of the spool.
        engine.spoolCapacity = configuration.userSpoolShare
        engine.partChecksum = configuration.s3Checksum
        var settings = RouteSettings()
        settings.engine = engine
        settings.allowGuestRead = configuration.allowGuestRead
        settings.resumable104 = configuration.resumable104
        settings.presignExpiry = configuration.presignExpiry
        settings.presignMaxExpiry = configuration.presignMaxExpiry
        settings.uploadTTL = configuration.uploadTTL
        settings.quota = OwnerQuota(maxActiveJobs: configuration.userMaxActiveJobs, maxOpenUploads: configuration.userMaxOpenUploads)
        settings.userRate = configuration.userRate
        settings.userMaxWaits = configuration.userMaxWaits
        settings.userMaxStreams = configuration.userMaxStreams
        settings.linkSecret = Array(linkSecret.utf8)
        settings.downloadTTL = configuration.downloadTTL
        return settings
    }

    static func http(_ configuration: Configuration) -> HTTPServerConfiguration {
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxConnections = configuration.maxConnections
        http.maxConnectionsPerClient = configuration.maxConnectionsPerClient
        http.trustedProxies = configuration.trustedProxies.compactMap(AddressBlock.init)
        return http
    }

    /// Starts the background parts (the job worker, the change listener).
    public func startBackground() {
        listener?.start()
        worker?.start()
        if let keySetRefresher { Task { await keySetRefresher.run() } }
        Task { [credentialsRefresher] in await credentialsRefresher.run() }
        if let webhooks { Task { await webhooks.run() } }
        if let fleet { Task { await fleet.run() } }
        if let uploadFinisher { Task { await uploadFinisher.run(every: 5) } }
    }

    /// `host[:port]` of a URL, as the address guard lists allowed hosts: the key set's host is
    /// the operator's choice, so it may be on a private network (a Keycloak beside the gateway).
    static func authority(of url: String) -> String {
        let rest = url.drop { $0 != "/" }.dropFirst(2)
        return String(rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }).lowercased()
    }

    /// SIGTERM: jobs handed back first (another instance takes them at once), then waiting
    /// requests answered and requests in flight finished for up to `grace` seconds. Idle
    /// connections serve one more request for `idleWindow` seconds (a balancer's pooled
    /// connection may carry one already).
    public func shutdown(grace: Double, idleWindow: Double = 0) async {
        await worker?.stop()
        await webhooks?.stop()
        await server.shutdown(grace: grace, idleWindow: idleWindow) { [changes] in changes.close() }
        listener?.stop()
        await fleet?.leave()
    }

    /// Seconds on the monotonic clock (for rates).
    static let monotonicSeconds: @Sendable () -> Double = {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Applies the missing schema migrations; returns the versions applied now.
    public static func migrate(databaseURL: String) async throws -> [Int] {
        try await Schema.migrations.apply(using: PostgresPool(url: databaseURL, size: 1))
    }

    /// A database newer than this binary: an instance of an older release must not run on it.
    public struct SchemaTooNew: Error, CustomStringConvertible {
        public let database: Int
        public var description: String {
            "the database's schema is version \(database), newer than this binary's \(Schema.latestVersion): run the newer transfer-gateway"
        }
    }

    /// What `migrate` and `serve` do first: the missing migrations applied, a schema newer than
    /// this binary refused, and the deployment's link secret made once (kept in PostgreSQL).
    public static func prepareDatabase(databaseURL: String) async throws -> (applied: [Int], deployment: Deployment) {
        try await prepareDatabase(using: PostgresPool(url: databaseURL, size: 1))
    }

    /// `prepareDatabase(databaseURL:)` over a pool of the caller's (its sessions' settings).
    static func prepareDatabase(using pool: PostgresPool) async throws -> (applied: [Int], deployment: Deployment) {
        let applied = try await Schema.migrations.apply(using: pool)
        let version = try await PostgresFleet.schemaVersion(pool: pool)
        guard version <= Schema.latestVersion else { throw SchemaTooNew(database: version) }
        let secret = try await PostgresFleet.linkSecret(pool: pool, fresh: Digest.hex(Digest.randomBytes(32)))
        return (applied, Deployment(linkSecret: secret, schemaVersion: version))
    }

    /// The JWT keys: the HS256 secret and/or the PEM public key file (RS256 or ES256).
    static func verifier(_ configuration: Configuration, keySet: KeySet? = nil) throws(Configuration.Invalid) -> JWTVerifier {
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
        var claims = JWTVerifier.ClaimNames()
        claims.identity = configuration.jwtIdentityClaim
        claims.roles = configuration.jwtRolesClaim
        claims.adminRole = configuration.jwtAdminRole
        return JWTVerifier(
            keys: keys, keySet: keySet, issuer: configuration.jwtIssuer, audience: configuration.jwtAudience,
            claims: claims, cache: VerifiedTokenCache())
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
