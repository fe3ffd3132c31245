import TransferEngine
import HTTPServer
import Synchronization

/// The gateway's answer to every parsed request: CORS, routing, errors as problem+json, one
/// log line and metrics per request. The HTTP server sees only this `HTTPResponder`.
public final class GatewayResponder: HTTPResponder {
    private let router: Router<RouteHandler>
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

    public init(router: Router<RouteHandler>, cors: CORS, logger: Logger, metrics: Metrics, instancePrefix: String,
         isUnavailable: @escaping @Sendable (any Error) -> Bool = { _ in false },
         beforeRoute: (@Sendable (HTTPRequest) async -> Void)? = nil) {
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
        let requestID = instancePrefix + String(requestCounter.add(1, ordering: .relaxed).newValue, radix: 36)
        var (response, pattern) = await route(request)
        if let origin = request.headers["origin"], cors.enabled, cors.allows(origin), !CORS.isPreflight(request) {
            cors.decorate(&response, origin: origin)
        }
        response.headers.add("X-Request-Id", requestID)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.recordRequest(route: pattern, method: Metrics.methodLabel(request.method), status: response.status, seconds: seconds)
        logger.request(id: requestID, method: request.method, route: pattern, path: request.path,
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
        logger.request(id: requestID, method: "-", route: "refused", path: "", status: error.status, microseconds: 0,
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
           ["PATCH", "DELETE", "HEAD"].contains(override) {
            method = override
        }
        switch router.route(method: method, path: request.path) {
        case .matched(let match):
            do {
                await beforeRoute?(request)
                let response = try await match.handler(RouteRequest(http: request, parameters: match.parameters))
                return (response, match.pattern)
            } catch let error as APIError {
                var response = Responses.problem(error)
                if error.status == 401 { response.headers.add("WWW-Authenticate", "Bearer") }
                return (response, match.pattern)
            } catch let quota as QuotaExceeded {
                return (Responses.problem(.quotaExceeded("This identity has \(quota.maximum) \(quota.limit.rawValue), the most allowed.",
                                                         retryAfter: 5)), match.pattern)
            } catch is CancellationError {
                // The client hung up (its connection cancelled the request's task).
                return (Responses.problem(.clientClosedRequest), match.pattern)
            } catch let error as RequestBodyError {
                switch error {
                case .tooLarge(let limit): return (Responses.problem(.tooLarge(limit)), match.pattern)
                case .malformed: return (Responses.problem(.badRequest("The request body is malformed.")), match.pattern)
                case .connectionClosed, .timedOut: return (Responses.problem(.badRequest("The request body did not arrive.")), match.pattern)
                }
            } catch let error where isUnavailable(error) {
                logger.warn("database unavailable", ["route": .string(match.pattern)])
                var response = Responses.problem(.unavailable("The job database is unavailable; try again shortly."))
                response.headers.add("Retry-After", "5")
                return (response, match.pattern)
            } catch {
                logger.error("handler failed", ["route": .string(match.pattern), "error": .string(String(describing: type(of: error)))])
                return (Responses.problem(.internalError), match.pattern)
            }
        case .methodNotAllowed(let allowed):
            var response = Responses.problem(.methodNotAllowed(allowed))
            response.headers.add("Allow", allowed.joined(separator: ", "))
            return (response, "unmatched")
        case .notFound:
            return (Responses.problem(.notFound), "unmatched")
        }
    }
}
