/// Whether the host of an import's `sourceUrl` falls under the address rules of URL imports
/// (loopback, private, link-local and metadata addresses are refused unless
/// `GATEWAY_IMPORT_ALLOW_HOSTS` lists the host), asked when the job is created so that such a
/// job is refused there (400 `forbidden_address`) rather than failing later. The fetcher checks
/// again on every connection and redirect: this is the early answer, not the guard.
public protocol SourceAddressCheck: Sendable {
    /// The refusal, or nil when the host is allowed or could not be judged in time (a name that
    /// does not resolve now; the fetcher decides when the job runs). Never blocks the caller's
    /// thread: a look-up runs on a thread of its own, bounded in time.
    func refusal(of sourceURL: String) async -> SourceAddressRefusal?
}

/// A `sourceUrl` whose `host` (at `port`) is, or resolves to, `address`, which falls under
/// `rule` (in words: "a loopback address").
public struct SourceAddressRefusal: Sendable, Equatable {
    public let host: String
    public let port: Int
    public let address: String
    public let rule: String

    public init(host: String, port: Int, address: String, rule: String) {
        self.host = host
        self.port = port
        self.address = address
        self.rule = rule
    }

    /// What the 400 says: the host, the rule, and the setting that would allow it.
    public var detail: String {
        let named =
            host == address || "[\(host)]" == address
            ? "sourceUrl's host \(address)" : "sourceUrl's host \(host) resolves to \(address), which"
        return "\(named) is \(rule): URL imports may not reach loopback, private, link-local or metadata addresses. "
            + "To allow this host, add \(host) (or \(host):\(port)) to GATEWAY_IMPORT_ALLOW_HOSTS and restart the gateway."
    }
}
