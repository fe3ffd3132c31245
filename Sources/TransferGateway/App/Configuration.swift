import Gateway
import S3
import TransferEngine

/// Every setting (docs/configuration.md) as one validated value, read from the environment here and
/// nowhere else. A malformed setting stops start-up with one line naming the variable.
public struct Configuration: Sendable {
    public typealias LogLevel = Logger.Level

    public var host = "127.0.0.1"
    public var port = 8080
    public var databaseURL: String?
    public var s3Endpoint: String?
    public var s3PublicEndpoint: String?
    public var s3Region = "us-east-1"
    public var s3Bucket: String?
    public var s3AccessKeyID: String?
    public var s3SecretAccessKey: String?
    public var s3SessionToken: String?
    /// When the S3 credentials stop working, in seconds since 1970 (temporary credentials).
    public var s3CredentialExpiration: Int?
    /// The rest of the S3 credentials chain (`AWS_WEB_IDENTITY_TOKEN_FILE`, the container
    /// endpoint, IMDS), used when no static keys are set: `Configuration+Credentials.swift`.
    public var credentialsChain = CredentialsChainSettings()
    public var s3PathStyle: Bool?
    /// How bodies sent to S3 prove their bytes: `crc32c` (S3's checksum headers) or `md5`
    /// (`Content-MD5`, for stores without them).
    public var s3Checksum: PartChecksum = .crc32c
    public var s3Accelerate = false
    /// PUTs of spooled bytes to a plain-HTTP store go by `sendfile` rather than through curl.
    public var s3Sendfile = true
    public var jwtSecret: String?
    /// An identity provider's JSON Web Key Set (https, or http on loopback).
    public var jwtJWKSURL: String?
    public var jwtIdentityClaim = "sub"
    public var jwtRolesClaim = "roles"
    public var jwtAdminRole = "admin"
    public var jwtPublicKeyFile: String?
    public var jwtIssuer: String?
    public var jwtAudience: String?
    public var allowGuestRead = false
    /// Whether a resumable-upload creation gets its `104 Upload Resumption Supported` (off
    /// behind a proxy that takes a 1xx for the final answer).
    public var resumable104 = true
    public var presignExpiry = 3000
    public var presignMaxExpiry = 604_800
    public var partSize = 5 * 1024 * 1024
    public var partConcurrency = 5
    public var maxPartConcurrency = 32
    public var retryLimit = 3
    /// A job's running-time limit, seconds (`GATEWAY_JOB_TIMEOUT`); nil (the default, or 0): none.
    public var jobTimeout: Int? = nil
    /// Seconds with no byte moving before a running job fails `stalled` (`GATEWAY_STALL_TIMEOUT`).
    public var stallTimeout = 300
    /// Seconds a job waiting out failures that may pass keeps trying with no progress
    /// (`GATEWAY_RETRY_WINDOW`).
    public var retryWindow = 86_400
    public var workers = 8
    public var leaseSeconds = 30
    public var maxObjectSize = 5_497_558_138_880
    public var uploadTTL = 86_400
    public var spoolDirectory = "./.spool"
    public var downloadTTL = 3600
    /// The key of `dataUrl` signatures; nil: a random one per instance.
    public var linkSecret: String?
    public var importAllowHosts: [String] = []
    /// Where job and upload events are POSTed, and the key that signs them.
    public var webhookURL: String?
    public var webhookSecret: String?
    /// Allowed browser origins; `["*"]` allows any.
    public var corsOrigins: [String] = []
    public var corsAllowCredentials = false
    public var logLevel = LogLevel.info
    /// Open HTTP connections at most (`GATEWAY_MAX_CONNECTIONS`; see the settings table in docs/configuration.md).
    public var maxConnections = 4096
    /// Seconds SIGTERM waits for requests in flight.
    public var shutdownGrace = 10.0
    /// Where `/openapi.yaml` is read from; found next to the binary or in the working folder when unset.
    public var openAPIPath: String?
    /// Bytes all in-memory transfer buffers of this instance may hold together.
    public var memoryBudget = 256 << 20
    /// Bytes the spool may hold on disk.
    public var spoolBudget = 10 << 30
    /// Open connections from one remote address (the forwarded client behind a trusted proxy).
    public var maxConnectionsPerClient = 256
    /// Load balancers whose `X-Forwarded-For` names the client: addresses or CIDRs.
    public var trustedProxies: [String] = []
    /// Jobs one identity may have pending, queued, running or paused.
    public var userMaxActiveJobs = 16
    /// Open client-driven and tus uploads per identity.
    public var userMaxOpenUploads = 64
    /// Creations (jobs, uploads) per second per identity; bursts of five times as many.
    public var userRate = 10.0
    /// Long polls and event streams one identity may hold open at once.
    public var userMaxWaits = 32
    /// Streams of job data (`GET /v1/jobs/{id}/data`, by token or `dataUrl`) open at once per job owner.
    public var userMaxStreams = 8
    /// One identity's share of the memory budget, in percent.
    public var userMemorySharePercent = 25
    /// One identity's share of the spool budget, in percent.
    public var userSpoolSharePercent = 25

    public init() {}

    /// The most one identity may hold of the memory budget, in bytes: never less than 8 MiB
    /// (one download read-ahead block: at that floor a stalled reader's block leaves the
    /// identity's other transfers waiting for its own room), nor more than the budget.
    public var userMemoryShare: Int64 {
        min(Int64(memoryBudget), max(Self.percent(userMemorySharePercent, of: Int64(memoryBudget)), 8 << 20))
    }

    /// `percent`% of `total`, rounded down, without multiplying `total` by 100 (a budget may be
    /// as large as 2^60).
    static func percent(_ percent: Int, of total: Int64) -> Int64 {
        total / 100 * Int64(percent) + total % 100 * Int64(percent) / 100
    }
    /// The most one identity may hold of the spool budget, in bytes: never less than one
    /// smallest part (5 MiB), nor more than the budget.
    public var userSpoolShare: Int64 {
        min(Int64(spoolBudget), max(Self.percent(userSpoolSharePercent, of: Int64(spoolBudget)), 5 << 20))
    }

    /// One bad setting: which variable, and what was wrong with it.
    public struct Invalid: Error, CustomStringConvertible {
        public let variable: String
        public let reason: String
        public var description: String { "\(variable): \(reason)" }
    }

    /// Reads and checks every variable. Values that are not secret are quoted in errors.
    public static func fromEnvironment(_ env: [String: String]) throws(Invalid) -> Configuration {
        let reader = EnvironmentReader(env: env)
        var c = Configuration()
        c.host = try reader.string("GATEWAY_HOST") ?? c.host
        c.port = try reader.integer("GATEWAY_PORT", in: 0...65535) ?? c.port
        c.databaseURL = try reader.string("GATEWAY_DATABASE_URL", secret: true)
        c.s3Endpoint = try reader.url("GATEWAY_S3_ENDPOINT")
        c.s3PublicEndpoint = try reader.url("GATEWAY_S3_PUBLIC_ENDPOINT")
        c.s3Region = try reader.string("GATEWAY_S3_REGION") ?? c.s3Region
        c.s3Bucket = try reader.string("GATEWAY_S3_BUCKET")
        let awsKey = try reader.string("AWS_ACCESS_KEY_ID")
        let awsSecret = try reader.string("AWS_SECRET_ACCESS_KEY", secret: true)
        let awsToken = try reader.string("AWS_SESSION_TOKEN", secret: true)
        c.s3AccessKeyID = try reader.string("GATEWAY_S3_ACCESS_KEY_ID") ?? awsKey
        c.s3SecretAccessKey = try reader.string("GATEWAY_S3_SECRET_ACCESS_KEY", secret: true) ?? awsSecret
        c.s3SessionToken = try reader.string("GATEWAY_S3_SESSION_TOKEN", secret: true) ?? awsToken
        // Temporary credentials' end (the AWS SDKs' AWS_CREDENTIAL_EXPIRATION): no presigned
        // URL outlives it, and presigning stops at it.
        let awsExpiration = try reader.timestamp("AWS_CREDENTIAL_EXPIRATION")
        c.s3CredentialExpiration = try reader.timestamp("GATEWAY_S3_CREDENTIAL_EXPIRATION") ?? awsExpiration
        c.credentialsChain = try CredentialsChainSettings.read(reader)
        c.s3PathStyle = try reader.bool("GATEWAY_S3_PATH_STYLE")
        if let checksum = try reader.string("GATEWAY_S3_CHECKSUM") {
            guard let chosen = PartChecksum(rawValue: checksum) else {
                throw Invalid(variable: "GATEWAY_S3_CHECKSUM", reason: "must be crc32c or md5")
            }
            c.s3Checksum = chosen
        }
        c.s3Accelerate = try reader.bool("GATEWAY_S3_ACCELERATE") ?? false
        c.s3Sendfile = try reader.bool("GATEWAY_S3_SENDFILE") ?? true
        c.jwtSecret = try reader.string("GATEWAY_JWT_SECRET", secret: true)
        c.jwtPublicKeyFile = try reader.string("GATEWAY_JWT_PUBLIC_KEY_FILE")
        if let url = try reader.string("GATEWAY_JWT_JWKS_URL") {
            guard Self.isKeySetURL(url) else {
                throw Invalid(variable: "GATEWAY_JWT_JWKS_URL", reason: "must be an https URL (http only on loopback)")
            }
            c.jwtJWKSURL = url
        }
        c.jwtIdentityClaim = try reader.string("GATEWAY_JWT_IDENTITY_CLAIM") ?? c.jwtIdentityClaim
        c.jwtRolesClaim = try reader.string("GATEWAY_JWT_ROLES_CLAIM") ?? c.jwtRolesClaim
        c.jwtAdminRole = try reader.string("GATEWAY_JWT_ADMIN_ROLE") ?? c.jwtAdminRole
        c.jwtIssuer = try reader.string("GATEWAY_JWT_ISSUER")
        c.jwtAudience = try reader.string("GATEWAY_JWT_AUDIENCE")
        c.allowGuestRead = try reader.bool("GATEWAY_ALLOW_GUEST_READ") ?? false
        c.resumable104 = try reader.bool("GATEWAY_RESUMABLE_104") ?? true
        c.presignMaxExpiry = try reader.integer("GATEWAY_PRESIGN_MAX_EXPIRY", in: 1...604_800) ?? c.presignMaxExpiry
        let expiryDefault = min(c.presignExpiry, c.presignMaxExpiry)
        c.presignExpiry = try reader.integer("GATEWAY_PRESIGN_EXPIRY", in: 1...c.presignMaxExpiry) ?? expiryDefault
        c.partSize = try reader.integer("GATEWAY_PART_SIZE", in: 5_242_880...5_368_709_120) ?? c.partSize
        c.maxPartConcurrency = try reader.integer("GATEWAY_MAX_PART_CONCURRENCY", in: 1...1024) ?? c.maxPartConcurrency
        let concurrencyDefault = min(c.partConcurrency, c.maxPartConcurrency)
        c.partConcurrency = try reader.integer("GATEWAY_PART_CONCURRENCY", in: 1...c.maxPartConcurrency) ?? concurrencyDefault
        c.retryLimit = try reader.integer("GATEWAY_RETRY_LIMIT", in: 0...100) ?? c.retryLimit
        c.jobTimeout = try reader.integer("GATEWAY_JOB_TIMEOUT", in: 0...31_536_000).flatMap { $0 == 0 ? nil : $0 } ?? c.jobTimeout
        c.stallTimeout = try reader.integer("GATEWAY_STALL_TIMEOUT", in: 1...86_400) ?? c.stallTimeout
        c.retryWindow = try reader.integer("GATEWAY_RETRY_WINDOW", in: 1...31_536_000) ?? c.retryWindow
        c.workers = try reader.integer("GATEWAY_WORKERS", in: 1...1024) ?? c.workers
        c.leaseSeconds = try reader.integer("GATEWAY_LEASE_SECONDS", in: 2...3600) ?? c.leaseSeconds
        c.maxObjectSize = try reader.integer("GATEWAY_MAX_OBJECT_SIZE", in: 1...5_497_558_138_880) ?? c.maxObjectSize
        c.uploadTTL = try reader.integer("GATEWAY_UPLOAD_TTL", in: 60...31_536_000) ?? c.uploadTTL
        c.spoolDirectory = try reader.string("GATEWAY_SPOOL_DIR") ?? c.spoolDirectory
        c.downloadTTL = try reader.integer("GATEWAY_DOWNLOAD_TTL", in: 1...31_536_000) ?? c.downloadTTL
        c.linkSecret = try reader.string("GATEWAY_LINK_SECRET", secret: true)
        if let secret = c.linkSecret, secret.utf8.count < 16 {
            throw Invalid(variable: "GATEWAY_LINK_SECRET", reason: "must be at least 16 bytes")
        }
        c.importAllowHosts = try reader.hostList("GATEWAY_IMPORT_ALLOW_HOSTS")
        c.webhookURL = try reader.string("GATEWAY_WEBHOOK_URL", secret: true)
        c.webhookSecret = try reader.string("GATEWAY_WEBHOOK_SECRET", secret: true)
        if let url = c.webhookURL {
            // Checked as delivery will read it, so a URL that could never be used stops the start.
            guard url.utf8.count <= 2048, url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), URLFetcher.isUsable(url) else {
                throw Invalid(variable: "GATEWAY_WEBHOOK_URL", reason: "must be an http(s) URL without user info")
            }
            guard let secret = c.webhookSecret, secret.utf8.count >= 16 else {
                throw Invalid(variable: "GATEWAY_WEBHOOK_SECRET", reason: "is required with GATEWAY_WEBHOOK_URL, at least 16 bytes")
            }
        }
        c.corsOrigins = try reader.originList("GATEWAY_CORS_ORIGINS")
        c.corsAllowCredentials = try reader.bool("GATEWAY_CORS_ALLOW_CREDENTIALS") ?? false
        c.logLevel = try reader.logLevel("GATEWAY_LOG_LEVEL") ?? c.logLevel
        c.maxConnections = try reader.integer("GATEWAY_MAX_CONNECTIONS", in: 1...1_000_000) ?? c.maxConnections
        let grace = try reader.integer("GATEWAY_SHUTDOWN_GRACE", in: 0...3600)
        c.shutdownGrace = Double(grace ?? 10)
        c.openAPIPath = try reader.string("GATEWAY_OPENAPI_PATH")
        c.memoryBudget = try reader.integer("GATEWAY_MEMORY_BUDGET", in: (16 << 20)...(1 << 50)) ?? c.memoryBudget
        c.spoolBudget = try reader.integer("GATEWAY_SPOOL_BUDGET", in: (16 << 20)...(1 << 60)) ?? c.spoolBudget
        c.maxConnectionsPerClient = try reader.integer("GATEWAY_MAX_CONNECTIONS_PER_CLIENT", in: 1...1_000_000) ?? c.maxConnectionsPerClient
        c.trustedProxies = try reader.cidrList("GATEWAY_TRUSTED_PROXIES")
        c.userMaxActiveJobs = try reader.integer("GATEWAY_USER_MAX_ACTIVE_JOBS", in: 1...1_000_000) ?? c.userMaxActiveJobs
        c.userMaxOpenUploads = try reader.integer("GATEWAY_USER_MAX_OPEN_UPLOADS", in: 1...1_000_000) ?? c.userMaxOpenUploads
        c.userRate = Double(try reader.integer("GATEWAY_USER_RATE", in: 1...1_000_000) ?? Int(c.userRate))
        c.userMaxWaits = try reader.integer("GATEWAY_USER_MAX_WAITS", in: 1...1_000_000) ?? c.userMaxWaits
        c.userMaxStreams = try reader.integer("GATEWAY_USER_MAX_STREAMS", in: 1...1_000_000) ?? c.userMaxStreams
        c.userMemorySharePercent = try reader.integer("GATEWAY_USER_MEMORY_SHARE", in: 1...100) ?? c.userMemorySharePercent
        c.userSpoolSharePercent = try reader.integer("GATEWAY_USER_SPOOL_SHARE", in: 1...100) ?? c.userSpoolSharePercent
        return c
    }

    /// What `serve` cannot run without.
    public func checkServeRequirements() throws(Invalid) {
        if databaseURL == nil { throw Invalid(variable: "GATEWAY_DATABASE_URL", reason: "is required") }
        if s3Bucket == nil { throw Invalid(variable: "GATEWAY_S3_BUCKET", reason: "is required") }
        // Without static keys the rest of the chain may bring credentials (`serve` asks it once
        // before listening); with half a pair, or nothing at all, the keys are what is missing.
        if s3AccessKeyID == nil && (s3SecretAccessKey != nil || s3CredentialsSource == nil) {
            throw Invalid(variable: "GATEWAY_S3_ACCESS_KEY_ID", reason: "is required (or AWS_ACCESS_KEY_ID)")
        }
        if s3SecretAccessKey == nil && s3AccessKeyID != nil {
            throw Invalid(variable: "GATEWAY_S3_SECRET_ACCESS_KEY", reason: "is required (or AWS_SECRET_ACCESS_KEY)")
        }
        if jwtSecret == nil && jwtPublicKeyFile == nil && jwtJWKSURL == nil {
            throw Invalid(variable: "GATEWAY_JWT_SECRET", reason: "is required (or GATEWAY_JWT_PUBLIC_KEY_FILE, or GATEWAY_JWT_JWKS_URL)")
        }
    }

    /// `https://…`, or `http://` to a loopback host (a provider run beside the gateway): a key
    /// set fetched in the clear over a network could be anyone's.
    static func isKeySetURL(_ url: String) -> Bool {
        let lower = url.lowercased()
        guard url.utf8.count <= 2048, url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        if lower.hasPrefix("https://") { return lower.count > "https://".count }
        guard lower.hasPrefix("http://") else { return false }
        let rest = lower.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return false }
        let host: Substring
        if authority.hasPrefix("[") {
            host = authority.prefix { $0 != "]" } + "]"
        } else {
            host = authority.prefix { $0 != ":" }
        }
        return ["localhost", "[::1]"].contains(String(host)) || host.hasPrefix("127.")
    }
}
