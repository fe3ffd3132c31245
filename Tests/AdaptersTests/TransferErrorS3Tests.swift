import S3
import Testing
import TransferEngine

@testable import Adapters

/// S3's error codes become the object store port's own cases in the adapter, once: nothing
/// above it compares S3's spelling.
struct TransferErrorS3Tests {
    @Test(arguments: [
        ("NoSuchKey", 404, FailureCode.notFound), ("NotFound", 404, .notFound), ("NoSuchUpload", 404, .noSuchUpload),
        ("NoSuchBucket", 404, .bucketMissing), ("PreconditionFailed", 412, .preconditionFailed),
        ("AccessDenied", 403, .accessDenied), ("SignatureDoesNotMatch", 403, .credentialsRejected),
        ("ExpiredToken", 400, .credentialsRejected), ("SlowDown", 503, .throttled), ("InternalError", 500, .storageUnavailable),
        ("ServiceUnavailable", 503, .storageUnavailable), ("InvalidPart", 400, .invalidPart),
        ("InvalidPartOrder", 400, .invalidPart), ("EntityTooSmall", 400, .invalidPart), ("EntityTooLarge", 400, .entityTooLarge),
        ("InvalidRange", 416, .invalidRange), ("BadDigest", 400, .checksumMismatch),
        ("KMS.DisabledException", 400, .encryptionRefused), ("InvalidRequest", 400, .storageRejected),
        // A code S3 did not spell out: its status decides.
        ("HTTP404", 404, .notFound), ("HTTP412", 412, .preconditionFailed), ("HTTP502", 502, .storageUnavailable),
        ("HTTP429", 429, .throttled), ("SomethingNew", 409, .storageRejected),
    ])
    func serviceErrors(code: String, status: Int, expected: FailureCode) {
        let error = TransferError(S3Error(kind: .service, status: status, code: code, message: ""))
        #expect(error.code == expected, "\(code) \(status)")
    }

    @Test func whetherARetryHelpsIsS3s() {
        #expect(TransferError(S3Error(kind: .service, status: 503, code: "SlowDown", message: "")).retryable)
        #expect(!TransferError(S3Error(kind: .service, status: 403, code: "AccessDenied", message: "")).retryable)
    }

    @Test func noAnswerIsTheStoreBeingUnavailable() {
        let reset = TransferError(S3Error(kind: .transport, status: 0, code: "ConnectionReset", message: ""))
        #expect(reset.code == .storageUnavailable && reset.retryable)
        let garbled = TransferError(S3Error(kind: .protocolViolation, status: 200, code: "BadResponse", message: ""))
        #expect(garbled.code == .badResponse && !garbled.retryable)
    }
}
