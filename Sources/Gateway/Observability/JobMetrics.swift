import TransferEngine

/// The engine's observations as Prometheus counters: bytes moved and jobs ended by type and
/// state, failed part attempts by type and failure code. Codes are `FailureCode`'s fixed set, so
/// no answer of S3 or a source can add a series.
public struct JobMetrics: JobObserver {
    let metrics: Metrics

    public init(metrics: Metrics) {
        self.metrics = metrics
    }

    public func partMoved(kind: Job.Kind, bytes: Int64) {
        metrics.increment("gateway_job_bytes_total{type=\"\(kind.rawValue)\"}", by: Int(bytes))
    }

    public func partFailed(kind: Job.Kind, code: FailureCode) {
        metrics.increment("gateway_job_part_failures_total{type=\"\(kind.rawValue)\",code=\"\(code.rawValue)\"}")
    }

    public func jobEnded(kind: Job.Kind, state: Job.State) {
        metrics.increment("gateway_jobs_ended_total{type=\"\(kind.rawValue)\",state=\"\(state.rawValue)\"}")
    }
}
