import S3
import TransferEngine

/// S3's error codes, translated where they enter into the object store port's own cases: the
/// one place that knows S3's spelling (S3 API Reference, "Error responses", list of error codes).
extension TransferError {
    /// `error` as the port's error; whether a retry can help is S3's (`S3Error.retryable`).
    init(_ error: S3Error) {
        self.init(code: Self.code(of: error), retryable: error.retryable)
    }

    static func code(of error: S3Error) -> FailureCode {
        switch error.kind {
        case .transport, .cancelled: return .storageUnavailable
        case .protocolViolation: return .badResponse
        case .service: break
        }
        if let code = byS3Code[error.code] { return code }
        if error.code.hasPrefix("KMS") { return .encryptionRefused }
        switch error.status {
        case 404: return .notFound
        case 412: return .preconditionFailed
        case 403: return .accessDenied
        case 429: return .throttled
        case 500...599: return .storageUnavailable
        default: return .storageRejected
        }
    }

    static let byS3Code: [String: FailureCode] = [
        "NoSuchKey": .notFound, "NotFound": .notFound,
        "NoSuchUpload": .noSuchUpload,
        "NoSuchBucket": .bucketMissing,
        "PreconditionFailed": .preconditionFailed,
        "AccessDenied": .accessDenied, "AllAccessDisabled": .accessDenied,
        "InvalidAccessKeyId": .credentialsRejected, "SignatureDoesNotMatch": .credentialsRejected,
        "ExpiredToken": .credentialsRejected, "InvalidToken": .credentialsRejected, "TokenRefreshRequired": .credentialsRejected,
        "SlowDown": .throttled, "Throttling": .throttled, "ThrottlingException": .throttled, "RequestLimitExceeded": .throttled,
        "InternalError": .storageUnavailable, "ServiceUnavailable": .storageUnavailable, "RequestTimeout": .storageUnavailable,
        "OperationAborted": .storageUnavailable, "IncompleteBody": .storageUnavailable,
        "RequestTimeTooSkewed": .storageUnavailable,
        "InvalidPart": .invalidPart, "InvalidPartOrder": .invalidPart, "EntityTooSmall": .invalidPart,
        "EntityTooLarge": .entityTooLarge,
        "InvalidRange": .invalidRange,
        "BadDigest": .checksumMismatch, "InvalidDigest": .checksumMismatch, "XAmzContentSHA256Mismatch": .checksumMismatch,
    ]
}
