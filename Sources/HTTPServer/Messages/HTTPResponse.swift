/// A response: status, header fields and a body that is empty, fixed, or streamed.
///
/// The server adds `Date`, `Content-Length` or `Transfer-Encoding: chunked`, and `Connection`
/// itself; a handler sets only what it means.
public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case empty
        case bytes([UInt8])
        /// Produced while it is sent. `length` nil means chunked (or close-delimited for
        /// HTTP/1.0). Each `write` waits while the socket is backed up.
        case stream(length: Int?, @Sendable (ResponseBodyWriter) async throws -> Void)
    }

    public var status: Int
    public var headers: HTTPHeaders
    public var body: Body

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Plain text, for the server's own answers and simple handlers.
    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: HTTPHeaders([("Content-Type", "text/plain; charset=utf-8")]),
            body: .bytes(Array(text.utf8)))
    }
}

/// Writes a streamed response body; handed to the producer of a `.stream` body.
public struct ResponseBodyWriter: Sendable {
    private let sink: @Sendable (ArraySlice<UInt8>) async throws -> Void

    init(sink: @escaping @Sendable (ArraySlice<UInt8>) async throws -> Void) {
        self.sink = sink
    }

    /// Sends `bytes`, waiting while the client is slower than the producer.
    public func write(_ bytes: ArraySlice<UInt8>) async throws {
        if bytes.isEmpty { return }
        try await sink(bytes)
    }

    public func write(_ bytes: [UInt8]) async throws {
        try await write(bytes[...])
    }
}

/// The client went away (or timed out) while a streamed body was being written.
public struct ResponseWriteError: Error, Sendable {}
