import HTTPServer

/// What a route handler gets: the request and the decoded path parameters.
public struct RouteRequest: Sendable {
    public let http: HTTPRequest
    public let parameters: [String: String]
}

/// A route handler. Throwing an `APIError` answers with its problem+json; anything else is a
/// 500 with the error logged.
public typealias RouteHandler = @Sendable (RouteRequest) async throws -> HTTPResponse

/// A route that needs no wait (no store, no network, a body that came with its head): the
/// server answers it on its event loop, without a task. Same rule for errors.
public typealias AtOnceHandler = @Sendable (RouteRequest) throws -> HTTPResponse

/// What a route leads to: its handler, and the same answer given at once where it can be.
public struct GatewayRoute: Sendable {
    public let handler: RouteHandler
    public let atOnce: AtOnceHandler?
}

extension Router where Handler == GatewayRoute {
    /// `atOnce`, when given, answers the same requests without a wait where the request allows
    /// (see `GatewayResponder.respondAtOnce`); `handler` answers the others. Only patterns
    /// without parameters are looked up for an answer at once (one lookup, no scan, for every
    /// request).
    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping RouteHandler, atOnce: AtOnceHandler? = nil) {
        add(method, pattern, GatewayRoute(handler: handler, atOnce: atOnce))
    }

    /// A route that never waits, answered at once whenever its request allows.
    public mutating func addAtOnce(_ method: String, _ pattern: String, _ handler: @escaping AtOnceHandler) {
        add(method, pattern, GatewayRoute(handler: { try handler($0) }, atOnce: handler))
    }
}
