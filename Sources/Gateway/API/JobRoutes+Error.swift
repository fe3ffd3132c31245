import TransferEngine

extension JobRoutes {
    /// A failed job's `error` (and a waiting job's `lastError`) as every answer shows it (API,
    /// events, webhooks): its `code`, the `cause` when retries ran out, a source's HTTP
    /// `status`, whether `POST /v1/jobs/{id}/retry` may resume it (`retryable`), and the
    /// `detail` that says what happened and what to do.
    static func errorJSON(_ failure: JobFailure) -> [UInt8] {
        var text = JSONText()
        text.begin()
        text.field("code", .string(failure.code.rawValue))
        if let cause = failure.cause { text.field("cause", .string(cause.rawValue)) }
        if let status = failure.status { text.field("status", .int(status)) }
        text.field("retryable", .bool(failure.retryable))
        text.field("detail", .string(failure.detail))
        text.end()
        return text.bytes
    }
}
