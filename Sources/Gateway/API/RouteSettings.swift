import TransferEngine

/// What the routes are told by the settings (the composition root reads them from the
/// environment; a test rig sets what it tests).
public struct RouteSettings: Sendable {
    /// Part sizes, budgets and limits of transfers (the engine's own settings).
    public var engine = EngineSettings()
    /// Whether reads of `public` objects need no token (`GATEWAY_ALLOW_GUEST_READ`).
    public var allowGuestRead = false
    /// Whether a resumable-upload creation sends `104 Upload Resumption Supported` with the
    /// upload's URL before the body (`GATEWAY_RESUMABLE_104`).
    public var resumable104 = true
    /// Seconds a presigned URL lives unless asked otherwise (`GATEWAY_PRESIGN_EXPIRY`).
    public var presignExpiry = 3000
    /// The most seconds a presigned URL may be asked to live (`GATEWAY_PRESIGN_MAX_EXPIRY`).
    public var presignMaxExpiry = 604_800
    /// Seconds an upload lives after its last byte (`GATEWAY_UPLOAD_TTL`): tus `Upload-Expires`.
    public var uploadTTL = 86_400
    /// Active jobs and open uploads per identity.
    public var quota = OwnerQuota(maxActiveJobs: 16, maxOpenUploads: 64)
    /// Creations per second per identity (`GATEWAY_USER_RATE`).
    public var userRate = 10.0
    /// Long polls and event streams held at once per identity (`GATEWAY_USER_MAX_WAITS`).
    public var userMaxWaits = 32
    /// Data streams open at once per job owner (`GATEWAY_USER_MAX_STREAMS`).
    public var userMaxStreams = 8
    /// The key of `dataUrl` signatures (`GATEWAY_LINK_SECRET`); nil: no links.
    public var linkSecret: [UInt8]?
    /// Seconds a download job's data is served after it was made (`GATEWAY_DOWNLOAD_TTL`).
    public var downloadTTL = 3600

    public init() {}
}
