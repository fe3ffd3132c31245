/// Every error the API answers with: a stable `code` (the one table, `APIError.Code`, gives its
/// status) and a detail. Bodies are `application/problem+json` (RFC 9457) with `type`, `title`,
/// `status`, `code`, `detail`. The detail is for people; clients branch on `code`. Nothing
/// secret goes in a detail.
public struct APIError: Error, Sendable, Equatable {
    public let code: Code
    public let detail: String
    /// Seconds after which trying again may succeed (`Retry-After`), for 429 and 503.
    public var retryAfter: Int?

    public init(_ code: Code, _ detail: String, retryAfter: Int? = nil) {
        self.code = code
        self.detail = detail
        self.retryAfter = retryAfter
    }

    /// A status a protocol fixes for this code, overriding the table's (tus's 460 for
    /// `checksum_mismatch`).
    public var protocolStatus: Int?

    public var status: Int { protocolStatus ?? code.status }

    /// Every code the API answers with, and its status: the one table (openapi.yaml's
    /// `Problem.code` lists them all; the HTTP server's own refusals are in `HTTPParseError`).
    public enum Code: String, CaseIterable, Sendable {
        case badRequest = "bad_request"
        case invalidJSON = "invalid_json"
        case validationFailed = "validation_failed"
        case unknownField = "unknown_field"
        case optionNotSupported = "option_not_supported"
        case invalidKey = "invalid_key"
        case duplicateAuthorization = "duplicate_authorization"
        case checksumAlgorithmUnsupported = "checksum_algorithm_unsupported"
        case invalidContentDigest = "invalid_content_digest"
        case forbiddenAddress = "forbidden_address"
        case unauthorized
        case forbidden
        case originNotAllowed = "origin_not_allowed"
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
        case requestTimeout = "request_timeout"
        case jobNotCompleted = "job_not_completed"
        case offsetMismatch = "offset_mismatch"
        case uploadInProgress = "upload_in_progress"
        case jobNotPending = "job_not_pending"
        case jobPaused = "job_paused"
        case jobCompleting = "job_completing"
        case uploadNotOpen = "upload_not_open"
        case partMismatch = "part_mismatch"
        case partsMissing = "parts_missing"
        case sizeMismatch = "size_mismatch"
        case partOutOfRange = "part_out_of_range"
        case downloadExpired = "download_expired"
        case gone
        case tusVersionUnsupported = "tus_version_unsupported"
        case interopVersionUnsupported = "interop_version_unsupported"
        case uploadCompleted = "upload_completed"
        case lengthMismatch = "length_mismatch"
        case payloadTooLarge = "payload_too_large"
        case unsupportedMediaType = "unsupported_media_type"
        case rangeNotSatisfiable = "range_not_satisfiable"
        case sourceChanged = "source_changed"
        case objectExists = "object_exists"
        case preconditionFailed = "precondition_failed"
        case idempotencyKeyReused = "idempotency_key_reused"
        case quotaExceeded = "quota_exceeded"
        case checksumMismatch = "checksum_mismatch"
        case clientClosedRequest = "client_closed_request"
        case internalError = "internal_error"
        case notImplemented = "not_implemented"
        case storageError = "storage_error"
        case serviceUnavailable = "service_unavailable"
        case storageUnavailable = "storage_unavailable"
        case jobNotRetryable = "job_not_retryable"
        case notReady = "not_ready"
        case insufficientStorage = "insufficient_storage"

        public var status: Int {
            switch self {
            case .badRequest, .invalidJSON, .validationFailed, .unknownField, .optionNotSupported, .invalidKey, .forbiddenAddress,
                .duplicateAuthorization, .checksumAlgorithmUnsupported, .interopVersionUnsupported, .uploadCompleted,
                .lengthMismatch, .invalidContentDigest, .checksumMismatch:
                return 400
            case .unauthorized: return 401
            case .forbidden, .originNotAllowed: return 403
            case .notFound: return 404
            case .methodNotAllowed: return 405
            case .requestTimeout: return 408
            case .jobNotCompleted, .offsetMismatch, .uploadInProgress, .jobNotPending, .jobPaused, .jobCompleting, .uploadNotOpen,
                .partMismatch, .partsMissing, .sizeMismatch, .partOutOfRange, .jobNotRetryable:
                return 409
            case .downloadExpired, .gone: return 410
            case .tusVersionUnsupported, .sourceChanged, .objectExists, .preconditionFailed: return 412
            case .payloadTooLarge: return 413
            case .unsupportedMediaType: return 415
            case .idempotencyKeyReused: return 422
            case .rangeNotSatisfiable: return 416
            case .quotaExceeded: return 429
            case .clientClosedRequest: return 499
            case .internalError: return 500
            case .notImplemented: return 501
            case .storageError: return 502
            case .serviceUnavailable, .storageUnavailable, .notReady, .insufficientStorage: return 503
            }
        }
    }

    public static func badRequest(_ detail: String) -> APIError { APIError(.badRequest, detail) }
    public static func invalidJSON(_ detail: String) -> APIError { APIError(.invalidJSON, detail) }
    public static func validation(_ detail: String) -> APIError { APIError(.validationFailed, detail) }
    public static let unauthorized = APIError(.unauthorized, "A valid bearer token is required.")
    public static let forbidden = APIError(.forbidden, "This identity may not do that.")
    public static let originNotAllowed = APIError(.originNotAllowed, "This origin is not allowed.")
    public static let notFound = APIError(.notFound, "No such resource.")
    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        APIError(.methodNotAllowed, "Allowed: \(allowed.joined(separator: ", ")).")
    }
    public static func tooLarge(_ limit: Int) -> APIError { APIError(.payloadTooLarge, "The body is larger than \(limit) bytes.") }
    public static let unsupportedMediaType = APIError(.unsupportedMediaType, "The body must be application/json.")
    public static let internalError = APIError(.internalError, "The gateway failed; the error was logged.")
    public static func unavailable(_ detail: String) -> APIError { APIError(.serviceUnavailable, detail) }
    /// A per-identity limit (`GATEWAY_USER_*`) is reached.
    public static func quotaExceeded(_ detail: String, retryAfter: Int) -> APIError {
        APIError(.quotaExceeded, detail, retryAfter: retryAfter)
    }
    /// No room (memory or spool) for more bytes now.
    public static func noRoom(retryAfter: Int = 5) -> APIError {
        APIError(
            .insufficientStorage, "The gateway has no room for more bytes right now; send them again shortly.",
            retryAfter: retryAfter)
    }
    /// S3 is not answering now: the bytes committed so far are kept; send the rest later.
    public static func storageUnavailable(retryAfter: Int) -> APIError {
        APIError(
            .storageUnavailable,
            "S3 is not answering right now. The bytes committed so far are kept; send the rest from Upload-Offset after Retry-After.",
            retryAfter: retryAfter)
    }
    public static func optionNotSupported(_ name: String, _ type: String) -> APIError {
        APIError(.optionNotSupported, "A \(type) job does not use '\(name)'.")
    }
    public static let sourceChanged = APIError(.sourceChanged, "The object changed since the job pinned it; create a new job.")
    public static let jobPaused = APIError(.jobPaused, "The job was paused; resume it, then send the rest.")
    /// Pause or cancel of a job that has begun to write its object: it can only end completed
    /// (or failed), so the change would report what did not happen.
    public static let jobCompleting = APIError(
        .jobCompleting,
        "The job is writing its object and can no longer be paused or canceled; it ends completed or failed.")
    /// The client went away before the answer (logged, never seen by it).
    public static let clientClosedRequest = APIError(.clientClosedRequest, "The client closed the request.")

    /// The whole table, for the OpenAPI document and tests.
    public static var catalogue: [(code: String, status: Int)] { Code.allCases.map { ($0.rawValue, $0.status) } }
}
