import TransferEngine

/// The engine's observations as Prometheus counters: bytes moved and jobs ended by type and
/// state, failed part attempts by type and error code. Codes come from S3 and from sources, so
/// only known ones are labels of their own; any other is `Other`, and a source's HTTP status
/// is labelled by its class: no answer can add a series.
public struct JobMetrics: JobObserver {
    let metrics: Metrics

    public init(metrics: Metrics) {
        self.metrics = metrics
    }

    public func partMoved(kind: Job.Kind, bytes: Int64) {
        metrics.increment("gateway_job_bytes_total{type=\"\(kind.rawValue)\"}", by: Int(bytes))
    }

    public func partFailed(kind: Job.Kind, code: String) {
        metrics.increment("gateway_job_part_failures_total{type=\"\(kind.rawValue)\",code=\"\(Self.label(code))\"}")
    }

    static let knownCodes: Set<String> = [
        "NoSuchKey", "NoSuchUpload", "NoSuchBucket", "AccessDenied", "InvalidPart", "InvalidPartOrder", "EntityTooSmall",
        "EntityTooLarge", "PreconditionFailed", "NotFound", "BadRequest", "SlowDown", "InternalError", "RequestTimeout",
        "ServiceUnavailable", "Throttling", "OperationAborted", "IncompleteBody", "RequestTimeTooSkewed", "InvalidRange",
        "Timeout", "ConnectFailed", "ConnectionReset", "SSLError", "Cancelled", "BadResponse", "InvalidHeader", "CurlMulti",
        "SourceUnreachable", "ForbiddenAddress", "UnresolvableHost", "InvalidURL", "TooManyRedirects", "RangeIgnored",
        "ResponseTooLarge", FailureCode.sourceChanged, FailureCode.spoolFailed, FailureCode.spoolTooSmall,
        FailureCode.timeout, FailureCode.sizeMismatch, FailureCode.etagMismatch, FailureCode.invalidJob,
        FailureCode.invalidPartSize, FailureCode.crashLoop,
    ]

    /// A code as a label from a fixed set.
    static func label(_ code: String) -> String {
        if knownCodes.contains(code) { return code }
        if code.hasPrefix("SourceHTTP"), let digit = code.dropFirst(10).first, "12345".contains(digit) { return "SourceHTTP\(digit)xx" }
        if code.hasPrefix("HTTP"), let digit = code.dropFirst(4).first, "12345".contains(digit) { return "HTTP\(digit)xx" }
        return "Other"
    }

    public func jobEnded(kind: Job.Kind, state: Job.State) {
        metrics.increment("gateway_jobs_ended_total{type=\"\(kind.rawValue)\",state=\"\(state.rawValue)\"}")
    }
}
