import HTTPServer

/// What a route handler gets: the request and the decoded path parameters.
public struct RouteRequest: Sendable {
    public let http: HTTPRequest
    public let parameters: [String: String]
}

/// A route handler. Throwing an `APIError` answers with its problem+json; anything else is a
/// 500 with the error logged.
public typealias RouteHandler = @Sendable (RouteRequest) async throws -> HTTPResponse
