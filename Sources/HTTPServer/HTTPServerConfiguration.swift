/// How the server listens and what it tolerates from clients.
public struct HTTPServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port (tests); `HTTPServer.start()` returns the one bound.
    public var port = 8080
    public var limits = HTTPLimits()
    /// From a connection's first byte (or its opening) to a complete request head (slowloris).
    public var headerTimeout = 10.0
    /// Between requests on a kept-alive connection.
    public var idleTimeout = 60.0
    /// Without a byte of a request body the handler is waiting for.
    public var bodyTimeout = 60.0
    /// Without progress writing a response to a client that does not read.
    public var writeTimeout = 60.0
    /// Open connections at most; more are answered 503 and closed.
    public var maxConnections = 4096
    /// Open connections from one address at most; more are answered 429 and closed. Behind a
    /// trusted proxy it counts the requests in flight of each forwarded client instead.
    public var maxConnectionsPerClient = 256
    /// Proxies whose `X-Forwarded-For` names the client (for the per-client cap and the
    /// request's `clientAddress`); from anyone else the header is ignored.
    public var trustedProxies: [AddressBlock] = []
    /// Request body bytes buffered ahead of the handler before the socket stops being read.
    public var bodyHighWater = 512 * 1024
    /// Response bytes queued for a slow client before a streaming writer waits.
    public var responseHighWater = 256 * 1024
    /// Body bytes the server will read and throw away so a connection can be reused after a
    /// handler answered without reading the body; past this the connection is closed instead.
    public var discardLimit = 256 * 1024
    public var listenBacklog: Int32 = 1024

    public init() {}
}
