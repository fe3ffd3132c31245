import Gateway

/// The S3 credentials can sign: there are some and they have not ended (a refresh that keeps
/// failing shows here once the last good ones end). The answer names the source, never a key.
public struct CredentialsCheck: DependencyCheck {
    let refresher: CredentialsRefresher
    public var name: String { "credentials" }

    public init(refresher: CredentialsRefresher) {
        self.refresher = refresher
    }

    public func check(timeout: Int) async -> String? {
        refresher.problem()
    }
}
