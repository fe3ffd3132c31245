import HTTPServer
import Synchronization
import TransferEngine

/// The gateway's answer to every parsed request: CORS, routing, errors as problem+json, one
/// log line and metrics per request. The HTTP server sees only this `HTTPResponder`.
public final class GatewayResponder: HTTPResponder {
    private let router: Router<GatewayRoute>
    private let cors: CORS
    private let logger: Logger
    private let metrics: Metrics
    private let requestCounter = Atomic<UInt64>(0)
    private let instancePrefix: String
    /// Whether an error says a store is away for now (the database restarting): 503 with
    /// `Retry-After`, a state the client can wait out, not a bug. The adapters know which.
    private let isUnavailable: @Sendable (any Error) -> Bool
    /// Runs before a matched route (the authenticator's wait for an identity provider's keys).
    private let beforeRoute: (@Sendable (HTTPRequest) async -> Void)?

    public init(
        router: Router<GatewayRoute>, cors: CORS, logger: Logger, metrics: Metrics, instancePrefix: String,
        isUnavailable: @escaping @Sendable (any Error) -> Bool = { _ in false },
        beforeRoute: (@Sendable (HTTPRequest) async -> Void)? = nil
    ) {
        self.beforeRoute = beforeRoute
        self.router = router
        self.cors = cors
        self.logger = logger
        self.metrics = metrics
        self.instancePrefix = instancePrefix
        self.isUnavailable = isUnavailable
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let started = ContinuousClock.now
        let (response, pattern) = await route(request)
        return finish(response, pattern: pattern, for: request, started: started)
    }

    /// Routes added with `addAtOnce`, on the event loop: when the request's body (if any) came
    /// with its head, and no key set must be waited for (a request with a token, while the
    /// gateway reads an identity provider's keys, goes the usual way).
    public func respondAtOnce(to request: HTTPRequest) -> HTTPResponse? {
        let started = ContinuousClock.now
        guard request.body.isWhole, beforeRoute == nil || request.headers["authorization"] == nil,
            request.method == "GET" || request.method == "POST",
            let match = router.exactMatch(method: request.method, path: request.path),
            let atOnce = match.handler.atOnce
        else { return nil }
        let response: HTTPResponse
        do {
            _ = try QueryParameters.read(request)
            response = try atOnce(RouteRequest(http: request, parameters: match.parameters))
        } catch {
            response = answer(to: error, pattern: match.pattern)
        }
        return finish(response, pattern: match.pattern, for: request, started: started)
    }

    /// CORS, the request id, metrics and the log line: what every answer gets.
    private func finish(
        _ response: HTTPResponse, pattern: String, for request: HTTPRequest, started: ContinuousClock.Instant
    )
        -> HTTPResponse
    {
        var response = response
        let requestID = instancePrefix + String(requestCounter.add(1, ordering: .relaxed).newValue, radix: 36)
        if let origin = request.headers["origin"], cors.enabled, cors.allows(origin), !CORS.isPreflight(request) {
            cors.decorate(&response, origin: origin)
        }
        response.headers.add("X-Request-Id", requestID)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.recordRequest(route: pattern, method: Metrics.methodLabel(request.method), status: response.status, seconds: seconds)
        logger.request(
            id: requestID, method: request.method, route: pattern, path: request.path,
            status: response.status, microseconds: Int(seconds * 1_000_000),
            remote: request.clientAddress == request.remoteAddress ? request.remoteAddress : request.clientAddress)
        return response
    }

    /// A refusal of the HTTP layer gets what every answer gets: a request id, CORS headers for
    /// an allowed origin, its metrics and its log line.
    public func refused(_ error: HTTPParseError, origin: String?, remoteAddress: String) -> [(String, String)] {
        let requestID = instancePrefix + String(requestCounter.add(1, ordering: .relaxed).newValue, radix: 36)
        var headers: [(String, String)] = []
        if let origin, cors.enabled, cors.allows(origin) { headers += cors.headers(origin: origin) }
        headers.append(("X-Request-Id", requestID))
        metrics.recordRequest(route: "refused", method: "OTHER", status: error.status, seconds: 0)
        logger.request(
            id: requestID, method: "-", route: "refused", path: "", status: error.status, microseconds: 0,
            remote: remoteAddress)
        return headers
    }

    private func route(_ request: HTTPRequest) async -> (HTTPResponse, String) {
        if CORS.isPreflight(request), let origin = request.headers["origin"] {
            guard cors.enabled, cors.allows(origin) else { return (Responses.problem(.originNotAllowed), "preflight") }
            return (cors.preflight(origin: origin, requestedHeaders: request.headers["access-control-request-headers"]), "preflight")
        }
        // X-HTTP-Method-Override (tus): clients and proxies that can send only GET and POST.
        var method = request.method
        if method == "POST", request.path.utf8.starts(with: "/v1/tus/".utf8),
            let override = request.headers["x-http-method-override"]?.uppercased(),
            ["PATCH", "DELETE", "HEAD"].contains(override)
        {
            method = override
        }
        switch router.route(method: method, path: request.path) {
        case .matched(let match):
            do {
                // One rule on the query for every route, whether or not it reads one.
                _ = try QueryParameters.read(request)
                await beforeRoute?(request)
                let response = try await match.handler.handler(RouteRequest(http: request, parameters: match.parameters))
                return (response, match.pattern)
            } catch {
                return (answer(to: error, pattern: match.pattern), match.pattern)
            }
        case .methodNotAllowed(let allowed):
            var response = Responses.problem(.methodNotAllowed(allowed))
            response.headers.add("Allow", allowed.joined(separator: ", "))
            return (response, "unmatched")
        case .notFound:
            return (Responses.problem(.notFound), "unmatched")
        }
    }

    /// A handler's error as its answer.
    private func answer(to error: any Error, pattern: String) -> HTTPResponse {
        switch error {
        case let error as APIError:
            var response = Responses.problem(error)
            if error.status == 401 { response.headers.add("WWW-Authenticate", "Bearer") }
            return response
        case let quota as QuotaExceeded:
            return Responses.problem(
                .quotaExceeded(
                    "This identity has \(quota.maximum) \(quota.limit.rawValue), the most allowed.",
                    retryAfter: 5))
        case is CancellationError:
            // The client hung up (its connection cancelled the request's task).
            return Responses.problem(.clientClosedRequest)
        case let error as RequestBodyError:
            switch error {
            case .tooLarge(let limit): return Responses.problem(.tooLarge(limit))
            case .malformed: return Responses.problem(.badRequest("The request body is malformed."))
            case .connectionClosed, .timedOut: return Responses.problem(.badRequest("The request body did not arrive."))
            }
        case let error where isUnavailable(error):
            logger.warn("database unavailable", ["route": .string(pattern)])
            var response = Responses.problem(.unavailable("The job database is unavailable; try again shortly."))
            response.headers.add("Retry-After", "5")
            return response
        default:
            logger.error("handler failed", ["route": .string(pattern), "error": .string(String(describing: type(of: error)))])
            return Responses.problem(.internalError)
        }
    }
}
