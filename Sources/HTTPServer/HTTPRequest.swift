/// One request as a handler sees it: the validated head and a streamed body.
public struct HTTPRequest: Sendable {
    public let head: HTTPRequestHead
    public let body: RequestBody
    /// `address:port` of the peer.
    public let remoteAddress: String

    public init(head: HTTPRequestHead, body: RequestBody, remoteAddress: String) {
        self.head = head
        self.body = body
        self.remoteAddress = remoteAddress
    }

    public var method: String { head.method }
    public var path: Substring { head.path }
    public var query: Substring? { head.query }
    public var headers: HTTPHeaders { head.headers }
}

/// What the server calls for every request that parsed.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) async -> HTTPResponse
}
