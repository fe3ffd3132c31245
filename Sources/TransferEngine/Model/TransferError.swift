/// A failure of one of the engine's ports that move bytes (object store, source fetcher), as
/// the engine sees it: a code for the job's `error`, and whether a retry can help.
public struct TransferError: Error, Equatable, Sendable {
    public let code: String
    public let retryable: Bool

    public init(code: String, retryable: Bool) {
        self.code = code
        self.retryable = retryable
    }
}

extension TransferError {
    /// The source is not what the job pinned (size or ETag): retrying cannot help.
    public static let sourceChanged = TransferError(code: FailureCode.sourceChanged, retryable: false)
}
