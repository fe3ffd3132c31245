/// Every error the API answers with, each with a stable `code` and its status. Bodies are
/// `application/problem+json` (RFC 9457) with `type`, `title`, `status`, `code`, `detail`.
/// The detail is for people; clients branch on `code`. Nothing secret goes in a detail.
public struct APIError: Error, Sendable, Equatable {
    public let status: Int
    public let code: String
    public let detail: String
    /// Seconds after which trying again may succeed (`Retry-After`), for 429 and 503.
    public var retryAfter: Int?

    public init(status: Int, code: String, detail: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.detail = detail
        self.retryAfter = retryAfter
    }

    public static func badRequest(_ detail: String) -> APIError { APIError(status: 400, code: "bad_request", detail: detail) }
    public static func invalidJSON(_ detail: String) -> APIError { APIError(status: 400, code: "invalid_json", detail: detail) }
    public static func validation(_ detail: String) -> APIError { APIError(status: 400, code: "validation_failed", detail: detail) }
    public static let unauthorized = APIError(status: 401, code: "unauthorized", detail: "A valid bearer token is required.")
    public static let forbidden = APIError(status: 403, code: "forbidden", detail: "This identity may not do that.")
    public static let originNotAllowed = APIError(status: 403, code: "origin_not_allowed", detail: "This origin is not allowed.")
    public static let notFound = APIError(status: 404, code: "not_found", detail: "No such resource.")
    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        APIError(status: 405, code: "method_not_allowed", detail: "Allowed: \(allowed.joined(separator: ", ")).")
    }
    public static func tooLarge(_ limit: Int) -> APIError {
        APIError(status: 413, code: "payload_too_large", detail: "The body is larger than \(limit) bytes.")
    }
    public static let unsupportedMediaType = APIError(status: 415, code: "unsupported_media_type",
                                                      detail: "The body must be application/json.")
    public static let internalError = APIError(status: 500, code: "internal_error", detail: "The gateway failed; the error was logged.")
    public static func unavailable(_ detail: String) -> APIError { APIError(status: 503, code: "service_unavailable", detail: detail) }
    /// A per-identity limit (`GATEWAY_USER_*`) is reached.
    public static func quotaExceeded(_ detail: String, retryAfter: Int) -> APIError {
        APIError(status: 429, code: "quota_exceeded", detail: detail, retryAfter: retryAfter)
    }
    /// No room (memory or spool) for more bytes now.
    public static func noRoom(retryAfter: Int = 5) -> APIError {
        APIError(status: 503, code: "insufficient_storage",
                 detail: "The gateway has no room for more bytes right now; send them again shortly.", retryAfter: retryAfter)
    }
    public static let jobPaused = APIError(status: 409, code: "job_paused", detail: "The job was paused; resume it, then send the rest.")
    /// The client went away before the answer (logged, never seen by it).
    public static let clientClosedRequest = APIError(status: 499, code: "client_closed_request", detail: "The client closed the request.")

    /// The whole table, for the OpenAPI document and tests.
    public static let catalogue: [(code: String, status: Int)] = [
        ("bad_request", 400), ("invalid_json", 400), ("validation_failed", 400), ("invalid_key", 400), ("unauthorized", 401),
        ("forbidden", 403), ("origin_not_allowed", 403), ("not_found", 404), ("method_not_allowed", 405),
        ("payload_too_large", 413), ("unsupported_media_type", 415), ("internal_error", 500),
        ("service_unavailable", 503), ("not_ready", 503), ("job_not_completed", 409), ("download_expired", 410),
        ("range_not_satisfiable", 416), ("not_implemented", 501), ("offset_mismatch", 409), ("upload_in_progress", 409),
        ("job_not_pending", 409), ("storage_error", 502), ("tus_version_unsupported", 412), ("gone", 410),
        ("checksum_mismatch", 460), ("checksum_algorithm_unsupported", 400), ("upload_not_open", 409), ("part_mismatch", 409),
        ("parts_missing", 409), ("size_mismatch", 409), ("part_out_of_range", 409),
        ("quota_exceeded", 429), ("insufficient_storage", 503), ("job_paused", 409), ("client_closed_request", 499),
        ("duplicate_authorization", 400), ("request_timeout", 408),
    ]
}
