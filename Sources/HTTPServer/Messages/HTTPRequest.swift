import Synchronization

/// One request as a handler sees it: the validated head and a streamed body.
public struct HTTPRequest: Sendable {
    public let head: HTTPRequestHead
    public let body: RequestBody
    /// `address:port` of the peer.
    public let remoteAddress: String
    /// The client's address: the peer's, or the one a trusted proxy forwards (`X-Forwarded-For`).
    public let clientAddress: String
    private let server: ServerContext?
    private let informational: Informational?

    /// Sends an informational answer on the request's connection (nil outside a server).
    typealias Informational = @Sendable (Int, HTTPHeaders) async -> Bool

    public init(head: HTTPRequestHead, body: RequestBody, remoteAddress: String, clientAddress: String? = nil) {
        self.init(head: head, body: body, remoteAddress: remoteAddress, clientAddress: clientAddress, server: nil)
    }

    init(
        head: HTTPRequestHead, body: RequestBody, remoteAddress: String, clientAddress: String?, server: ServerContext?,
        informational: Informational? = nil
    ) {
        self.head = head
        self.body = body
        self.remoteAddress = remoteAddress
        self.clientAddress = clientAddress ?? remoteAddress
        self.server = server
        self.informational = informational
    }

    /// Sends an informational answer (1xx, e.g. `104 Upload Resumption Supported`) ahead of the
    /// final one, at once, before the handler reads any more of the body. True when it went
    /// out; false when it may not: to an HTTP/1.0 client, with a status outside 102–199, once the
    /// final answer has started, on a closing connection, or outside a server. A handler goes
    /// on either way; informational answers are advice a client may never see.
    public func sendInformational(status: Int, headers: HTTPHeaders = HTTPHeaders()) async -> Bool {
        guard let informational else { return false }
        return await informational(status, headers)
    }

    /// True once the server is shutting down. A handler that holds its answer back (a long poll)
    /// should answer now: the shutdown waits for answers only up to its grace period.
    public var serverIsShuttingDown: Bool { server?.shuttingDown.load(ordering: .acquiring) ?? false }

    public var method: String { head.method }
    public var path: Substring { head.path }
    public var query: Substring? { head.query }
    public var headers: HTTPHeaders { head.headers }
}

/// What the server calls for every request that parsed.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) async -> HTTPResponse
    /// The answer, when it needs no wait (no body still to come, no store, no network): given
    /// on the connection's event loop, it is sent there and then, without a task. nil: the
    /// request goes to `respond(to:)`.
    func respondAtOnce(to request: HTTPRequest) -> HTTPResponse?
    /// A request the HTTP layer refused before any route saw it (a malformed head, a timeout,
    /// a connection cap): the headers to add to the refusal (a request id, CORS for `origin`
    /// when the request said one), the place to log it. Runs on the connection's event loop.
    func refused(_ error: HTTPParseError, origin: String?, remoteAddress: String) -> [(String, String)]
}

extension HTTPResponder {
    public func respondAtOnce(to request: HTTPRequest) -> HTTPResponse? { nil }

    public func refused(_ error: HTTPParseError, origin: String?, remoteAddress: String) -> [(String, String)] { [] }
}
