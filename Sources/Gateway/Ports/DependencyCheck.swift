/// Something `/readyz` asks: does this dependency answer? (The adapters ask PostgreSQL and S3.)
public protocol DependencyCheck: Sendable {
    var name: String { get }
    /// Whether a failure is only reported: `/readyz` still answers 200 (the fleet check, whose
    /// disagreement between instances is for an operator to see, not a reason to take every
    /// instance out of the balancer during a rolling change).
    var isAdvisory: Bool { get }
    /// nil when healthy, else a short reason without secrets.
    func check(timeout: Int) async -> String?
}

extension DependencyCheck {
    public var isAdvisory: Bool { false }
}
