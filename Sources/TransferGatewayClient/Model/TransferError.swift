/// Why a transfer failed: a stable code for programs and words for people.
///
/// Branch on `code`, never on `message`. No token, signature or URL query reaches `message`.
public struct TransferError: Error, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The kinds of failure, stable across versions.
    public enum Code: String, Codable, Sendable {
        /// The object changed (another ETag or size) while it was being downloaded; nothing
        /// partial is left as if it were the file.
        case sourceChanged = "source_changed"
        /// The task was cancelled.
        case canceled
        /// The gateway refused the token, also after asking the token provider for a new one.
        case unauthorized
        /// The gateway answered 403: the access level's rules do not allow this.
        case forbidden
        /// The object, job or upload does not exist (any more).
        case notFound = "not_found"
        /// The gateway refused the request (a 4xx other than the above); `message` says why.
        case rejected
        /// Network errors, 5xx or 429 outlasted the retry limit.
        case retriesExhausted = "retries_exhausted"
        /// The gateway's job failed; `message` carries its failure code and detail.
        case serverFailed = "server_failed"
        /// The local file could not be read or written.
        case fileError = "file_error"
        /// The finished file or object is not the size (or ETag) it should be.
        case integrity
        /// An answer of the gateway or S3 could not be read.
        case badResponse = "bad_response"
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, for a person.
    public let message: String
    /// The HTTP status behind it, when there was one.
    public let status: Int?
    /// The gateway's problem or failure code (`offset_mismatch`, `source_changed`…), when given.
    public let serverCode: String?

    /// A transfer error.
    public init(_ code: Code, _ message: String, status: Int? = nil, serverCode: String? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.serverCode = serverCode
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }

    static let canceledByUser = TransferError(.canceled, "the transfer was cancelled")
}
