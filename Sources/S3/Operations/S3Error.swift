/// A failed S3 request: S3's own error code when it sent one (`NoSuchKey`, `SlowDown`, …),
/// or a transport failure. `retryable` says whether sending the same request again can help.
public struct S3Error: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// S3 answered with an error status or an error document.
        case service
        /// The request never got an answer (connect, reset, timeout).
        case transport
        /// The transfer was cancelled by the caller.
        case cancelled
        /// The answer could not be understood.
        case protocolViolation
    }

    public let kind: Kind
    public let status: Int
    /// S3's `Code` (service errors), or a short name of the transport failure.
    public let code: String
    public let message: String

    public init(kind: Kind, status: Int, code: String, message: String) {
        self.kind = kind
        self.status = status
        self.code = code
        self.message = message
    }

    /// Codes S3 documents as transient, plus server-side statuses.
    public var retryable: Bool {
        switch kind {
        case .cancelled, .protocolViolation: return false
        case .transport: return code != "SSLError"
        case .service:
            if [
                "InternalError", "SlowDown", "RequestTimeout", "ServiceUnavailable", "RequestTimeTooSkewed",
                "Throttling", "ThrottlingException", "OperationAborted", "IncompleteBody",
            ].contains(code) {
                return true
            }
            return status == 500 || status == 502 || status == 503 || status == 504 || status == 429
        }
    }

    public var description: String {
        "S3 \(code) (\(status))" + (message.isEmpty ? "" : ": \(message)")
    }

    static let cancelled = S3Error(kind: .cancelled, status: 0, code: "Cancelled", message: "the transfer was cancelled")

    /// Builds the error for a non-2xx answer (or a 200 carrying `<Error>`) from its body.
    static func fromResponse(status: Int, body: [UInt8]) -> S3Error {
        if let tree = try? XMLTree.parse(body), tree.name == "Error" {
            return S3Error(
                kind: .service, status: status, code: tree.text("Code") ?? "HTTP\(status)",
                message: tree.text("Message") ?? "")
        }
        let code: String
        switch status {
        case 301, 307: code = "PermanentRedirect"
        case 400: code = "BadRequest"
        case 403: code = "AccessDenied"
        case 404: code = "NotFound"
        case 412: code = "PreconditionFailed"
        case 416: code = "InvalidRange"
        case 503: code = "SlowDown"
        default: code = "HTTP\(status)"
        }
        return S3Error(kind: .service, status: status, code: code, message: "")
    }
}
