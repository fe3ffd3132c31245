/// Why a job failed, as its `error` shows it: the failure code, and what narrows it down.
public struct JobFailure: Sendable, Equatable, Codable {
    public var code: FailureCode
    /// For `retriesExhausted`: the failure the retries did not get past.
    public var cause: FailureCode?
    /// For `sourceHTTPError` (or a cause of that code): the source's HTTP status.
    public var status: Int?

    public init(_ code: FailureCode, cause: FailureCode? = nil, status: Int? = nil) {
        self.code = code
        self.cause = cause
        self.status = status
    }

    /// The failure a port's error leaves once the job gives up on it. Every error a retry could
    /// help has been retried by then, so it ends as `retriesExhausted`; a failed `If-Match` is
    /// the pinned source changing (the engine pins every conditional request to the source).
    public init(_ error: TransferError) {
        let code = error.code == .preconditionFailed ? FailureCode.sourceChanged : error.code
        if error.retryable {
            self.init(.retriesExhausted, cause: code, status: error.status)
        } else {
            self.init(code, status: error.status)
        }
    }

    /// What `error.detail` says.
    public var detail: String {
        guard let cause else { return code.detail(status: status) }
        return code.detail(status: status) + " Cause: " + cause.detail(status: status)
    }
}
