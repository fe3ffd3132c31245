/// What the engine reports as jobs run (the gateway's metrics implement it).
public protocol JobObserver: Sendable {
    func partMoved(kind: Job.Kind, bytes: Int64)
    /// A part attempt failed with `code` (retried or not).
    func partFailed(kind: Job.Kind, code: FailureCode)
    func jobEnded(kind: Job.Kind, state: Job.State)
}

public struct NoObserver: JobObserver {
    public init() {}
    public func partMoved(kind: Job.Kind, bytes: Int64) {}
    public func partFailed(kind: Job.Kind, code: FailureCode) {}
    public func jobEnded(kind: Job.Kind, state: Job.State) {}
}
