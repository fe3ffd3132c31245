/// The instances of a deployment, as each reports itself with a heartbeat: what
/// `GET /v1/admin/instances` lists and `/readyz` compares.
public protocol InstanceDirectory: Sendable {
    /// This instance.
    var current: InstanceRecord { get }
    /// Every instance with a recent heartbeat, and those gone for less than a day (`live` false).
    func instances() async throws -> [InstanceRecord]
}

/// One instance: who it is, what it runs, and digests of the settings every instance of a
/// deployment must share.
public struct InstanceRecord: Sendable, Equatable {
    public var id: String
    public var host: String
    public var version: String
    public var schemaVersion: Int
    /// SHA-256 (hex) over `settings`.
    public var settingsHash: String
    /// Each setting that must agree, by variable name, as a short digest (never the value).
    public var settings: [String: String]
    /// Seconds since 1970.
    public var startedAt: Int
    public var heartbeatAt: Int
    /// Whether its heartbeat is recent.
    public var live: Bool

    public init(
        id: String, host: String, version: String, schemaVersion: Int, settingsHash: String, settings: [String: String],
        startedAt: Int, heartbeatAt: Int, live: Bool
    ) {
        self.id = id
        self.host = host
        self.version = version
        self.schemaVersion = schemaVersion
        self.settingsHash = settingsHash
        self.settings = settings
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.live = live
    }

    /// How `other` differs from this instance in what must agree: the names of the settings
    /// that differ, then `version` and `schema` when those do; empty when they agree.
    public func disagreements(with other: InstanceRecord) -> [String] {
        var names = Set(settings.keys).union(other.settings.keys).filter { settings[$0] != other.settings[$0] }.sorted()
        if version != other.version { names.append("version") }
        if schemaVersion != other.schemaVersion { names.append("schema") }
        return names
    }
}
