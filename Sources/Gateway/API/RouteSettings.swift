import TransferEngine

/// What the routes are told by the settings (the composition root reads them from the
/// environment; a test rig sets what it tests).
public struct RouteSettings: Sendable {
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
