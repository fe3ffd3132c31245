/// Something `/readyz` asks: does this dependency answer? (The adapters ask PostgreSQL and S3.)
public protocol DependencyCheck: Sendable {
    var name: String { get }
    /// nil when healthy, else a short reason without secrets.
    func check(timeout: Int) async -> String?
}
