/// Size limits on what a client may send before a handler sees the request.
public struct HTTPLimits: Sendable {
    /// The request line, CRLF excluded (RFC 9112 §3: 8000 octets recommended; over it, 414).
    public var maxRequestLineBytes = 8 * 1024
    /// The header section after the request line, final CRLF included (over it, 431).
    public var maxHeaderBytes = 16 * 1024
    /// Header fields in one request (over it, 431).
    public var maxHeaderCount = 128
    /// One chunk-size line with its extensions.
    public var maxChunkLineBytes = 4 * 1024
    /// The trailer section of a chunked body.
    public var maxTrailerBytes = 16 * 1024

    public init() {}
}
