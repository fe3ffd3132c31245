/// Why a job failed, as its `error` shows it: the failure code, and what narrows it down.
public struct JobFailure: Sendable, Equatable, Codable {
    public var code: FailureCode
    /// For `retriesExhausted`: the failure the retries did not get past.
    public var cause: FailureCode?
    /// For `sourceHTTPError` (or a cause of that code): the source's HTTP status.
    public var status: Int?
    /// Waiting could get the job past it, and its S3 multipart upload with every recorded part
    /// was kept: `POST /v1/jobs/{id}/retry` resumes it within `GATEWAY_UPLOAD_TTL`.
    public var retryable: Bool

    public init(_ code: FailureCode, cause: FailureCode? = nil, status: Int? = nil, retryable: Bool = false) {
        self.code = code
        self.cause = cause
        self.status = status
        self.retryable = retryable
    }

    private enum CodingKeys: String, CodingKey { case code, cause, status, retryable }

    /// Failures recorded before `retryable` existed read as not retryable.
    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        code = try values.decode(FailureCode.self, forKey: .code)
        cause = try values.decodeIfPresent(FailureCode.self, forKey: .cause)
        status = try values.decodeIfPresent(Int.self, forKey: .status)
        retryable = try values.decodeIfPresent(Bool.self, forKey: .retryable) ?? false
    }

    /// `retryable` only when true, so a failure's record stays as it was for every other.
    public func encode(to encoder: any Encoder) throws {
        var values = encoder.container(keyedBy: CodingKeys.self)
        try values.encode(code, forKey: .code)
        try values.encodeIfPresent(cause, forKey: .cause)
        try values.encodeIfPresent(status, forKey: .status)
        if retryable { try values.encode(true, forKey: .retryable) }
    }

    /// Whether waiting could get a job past this failure: S3 or a source unavailable past the
    /// part's retries. Everything else (access denied, a source gone or changed, a size that is
    /// wrong) stays as it is however long the job waits.
    public var passesWithTime: Bool { code == .retriesExhausted }

    /// This failure, marked as one `POST /v1/jobs/{id}/retry` may resume.
    public var resumable: JobFailure {
        var failure = self
        failure.retryable = true
        return failure
    }

    /// The failure a port's error leaves once the job gives up on it. Every error a retry could
    /// help has been retried by then, so it ends as `retriesExhausted`; a failed `If-Match` is
    /// the pinned source changing, unless it was the write's own condition at the destination
    /// (`TransferError.destinationChanged`).
    public init(_ error: TransferError) {
        let code = error.code == .preconditionFailed && error != .destinationChanged ? FailureCode.sourceChanged : error.code
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
