import TransferEngine

/// The engine's observations as Prometheus counters: bytes moved and jobs ended by type and
/// state, failed part attempts by type and error code (codes cut to letters and digits, at
/// most 48, so a hostile source cannot mint unbounded label values).
struct JobMetrics: JobObserver {
    let metrics: Metrics

    func partMoved(kind: Job.Kind, bytes: Int64) {
        metrics.increment("gateway_job_bytes_total{type=\"\(kind.rawValue)\"}", by: Int(bytes))
    }

    func partFailed(kind: Job.Kind, code: String) {
        let clean = String(code.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.prefix(48))
        metrics.increment("gateway_job_part_failures_total{type=\"\(kind.rawValue)\",code=\"\(clean)\"}")
    }

    func jobEnded(kind: Job.Kind, state: Job.State) {
        metrics.increment("gateway_jobs_ended_total{type=\"\(kind.rawValue)\",state=\"\(state.rawValue)\"}")
    }
}
