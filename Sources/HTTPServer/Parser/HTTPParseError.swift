/// Why a request was refused before it reached a handler. Each has the status the server
/// answers with and a stable `code` for the problem+json body; the connection is closed after.
public struct HTTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: Int
    public let code: String
    public let detail: String

    public init(status: Int, code: String, detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(status) \(code): \(detail)" }

    static func bad(_ code: String, _ detail: String) -> HTTPParseError {
        HTTPParseError(status: 400, code: code, detail: detail)
    }

    static let requestLineTooLong = HTTPParseError(
        status: 414, code: "uri_too_long", detail: "The request line is longer than the server accepts.")
    static let headersTooLarge = HTTPParseError(
        status: 431, code: "headers_too_large", detail: "The header section is larger than the server accepts.")
    static let tooManyHeaders = HTTPParseError(
        status: 431, code: "too_many_headers", detail: "The request has more header fields than the server accepts.")
    static let bareLineFeed = bad("bad_line_ending", "Lines must end with CRLF.")
    static let bareCarriageReturn = bad("bad_line_ending", "A CR must be followed by LF.")
    static let badRequestLine = bad("bad_request_line", "The request line is malformed.")
    static let badTarget = bad("bad_request_target", "The request target is malformed.")
    static let unsupportedVersion = HTTPParseError(
        status: 505, code: "http_version_not_supported", detail: "Only HTTP/1.1 and HTTP/1.0 are served.")
    static let obsFold = bad("obsolete_line_folding", "Header values may not be folded over lines.")
    static let spaceBeforeColon = bad("bad_header_name", "White space between a header name and its colon is not allowed.")
    static let badHeaderName = bad("bad_header_name", "A header name is empty or has a character that is not allowed.")
    static let badHeaderValue = bad("bad_header_value", "A header value has a control character.")
    static let missingColon = bad("bad_header", "A header line has no colon.")
    static let missingHost = bad("missing_host", "An HTTP/1.1 request needs exactly one Host header.")
    static let duplicateHost = bad("duplicate_host", "The request has more than one Host header.")
    static let badHost = bad("bad_host", "The Host header is malformed.")
    static let lengthAndChunked = bad(
        "content_length_with_transfer_encoding",
        "Content-Length and Transfer-Encoding may not be sent together.")
    static let badContentLength = bad("bad_content_length", "Content-Length is not a valid number.")
    static let conflictingContentLength = bad("conflicting_content_length", "Content-Length values disagree.")
    static let chunkedNotFinal = bad("bad_transfer_encoding", "Transfer-Encoding must end with chunked, once.")
    static let unsupportedTransferCoding = HTTPParseError(
        status: 501, code: "unsupported_transfer_encoding", detail: "Only the chunked transfer coding is supported.")
    static let transferEncodingInHTTP10 = bad("bad_transfer_encoding", "HTTP/1.0 requests may not use Transfer-Encoding.")
    static let expectationFailed = HTTPParseError(
        status: 417, code: "expectation_failed", detail: "Only the 100-continue expectation is supported.")
    static func badChunk(_ detail: String) -> HTTPParseError { bad("bad_chunk", detail) }
}
