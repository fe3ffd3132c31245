/// A failure of one of the engine's ports that move bytes (object store, source fetcher), in
/// the ports' own vocabulary (their adapters translate S3's and HTTP's codes where they enter):
/// a code, whether a retry can help, and a source's HTTP status where there is one.
public struct TransferError: Error, Equatable, Sendable {
    public let code: FailureCode
    public let retryable: Bool
    /// The source's HTTP status, for `sourceHTTPError`.
    public let status: Int?

    public init(code: FailureCode, retryable: Bool, status: Int? = nil) {
        self.code = code
        self.retryable = retryable
        self.status = status
    }
}

extension TransferError {
    /// The source is not what the job pinned (size or ETag): retrying cannot help.
    public static let sourceChanged = TransferError(code: .sourceChanged, retryable: false)

    /// A conditional request's `If-Match` did not hold: the object is no longer the one pinned.
    public static let preconditionFailed = TransferError(code: .preconditionFailed, retryable: false)

    /// A write's own condition (`WriteCondition.etag`) did not hold at the destination. Its
    /// status 412 tells it from a failed pin of the source, which is the source changing.
    public static let destinationChanged = TransferError(code: .preconditionFailed, retryable: false, status: 412)

    /// A write with `WriteCondition.absent` found an object at the key.
    public static let objectExists = TransferError(code: .objectExists, retryable: false)
}
