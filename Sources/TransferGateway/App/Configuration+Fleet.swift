import Crypto

extension Configuration {
    /// The settings every instance of a deployment must share, by variable name, each as a
    /// short digest of its value (values never leave the instance: secrets among them). Instances
    /// that differ in any of these behave differently for the same request, whichever one a
    /// balancer picks. Per-instance settings (host, port, workers, budgets, log level, the spool
    /// folder) are not among them.
    func sharedSettingsDigests(linkSecret: String) -> [String: String] {
        let values: [(String, String?)] = [
            ("GATEWAY_S3_ENDPOINT", s3Endpoint), ("GATEWAY_S3_PUBLIC_ENDPOINT", s3PublicEndpoint),
            ("GATEWAY_S3_REGION", s3Region), ("GATEWAY_S3_BUCKET", s3Bucket), ("GATEWAY_S3_CHECKSUM", "\(s3Checksum)"),
            ("GATEWAY_JWT_SECRET", jwtSecret), ("GATEWAY_JWT_JWKS_URL", jwtJWKSURL), ("GATEWAY_JWT_ISSUER", jwtIssuer),
            ("GATEWAY_JWT_AUDIENCE", jwtAudience), ("GATEWAY_JWT_IDENTITY_CLAIM", jwtIdentityClaim),
            ("GATEWAY_JWT_ROLES_CLAIM", jwtRolesClaim), ("GATEWAY_JWT_ADMIN_ROLE", jwtAdminRole),
            ("GATEWAY_ALLOW_GUEST_READ", "\(allowGuestRead)"), ("GATEWAY_RESUMABLE_104", "\(resumable104)"),
            ("GATEWAY_PRESIGN_EXPIRY", "\(presignExpiry)"),
            ("GATEWAY_PRESIGN_MAX_EXPIRY", "\(presignMaxExpiry)"), ("GATEWAY_PART_SIZE", "\(partSize)"),
            ("GATEWAY_MAX_OBJECT_SIZE", "\(maxObjectSize)"), ("GATEWAY_UPLOAD_TTL", "\(uploadTTL)"),
            ("GATEWAY_DOWNLOAD_TTL", "\(downloadTTL)"), ("GATEWAY_LINK_SECRET", linkSecret),
            ("GATEWAY_IMPORT_ALLOW_HOSTS", importAllowHosts.joined(separator: ",")), ("GATEWAY_WEBHOOK_URL", webhookURL),
            ("GATEWAY_WEBHOOK_SECRET", webhookSecret), ("GATEWAY_CORS_ORIGINS", corsOrigins.joined(separator: ",")),
            ("GATEWAY_USER_RATE", "\(userRate)"), ("GATEWAY_USER_MAX_WAITS", "\(userMaxWaits)"),
            ("GATEWAY_USER_MAX_STREAMS", "\(userMaxStreams)"), ("GATEWAY_USER_MAX_ACTIVE_JOBS", "\(userMaxActiveJobs)"),
            ("GATEWAY_USER_MAX_OPEN_UPLOADS", "\(userMaxOpenUploads)"), ("GATEWAY_JOB_TIMEOUT", jobTimeout.map { "\($0)" }),
            ("GATEWAY_STALL_TIMEOUT", "\(stallTimeout)"), ("GATEWAY_RETRY_WINDOW", "\(retryWindow)"),
        ]
        var digests: [String: String] = [:]
        for (name, value) in values {
            // "unset" and "" differ; the name is in the digest so equal values of two settings
            // do not look alike.
            digests[name] = String(Digest.hex(Digest.sha256(name + "=" + (value.map { "v:" + $0 } ?? "unset"))).prefix(12))
        }
        return digests
    }

    /// SHA-256 (hex) over the digests, in name order.
    static func settingsHash(_ digests: [String: String]) -> String {
        Digest.hex(Digest.sha256(digests.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)\n" }.joined()))
    }
}
