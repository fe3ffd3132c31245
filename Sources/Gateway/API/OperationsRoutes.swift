import HTTPServer

/// `/healthz`, `/readyz`, `/metrics`, `/openapi.yaml`.
struct OperationsRoutes: Sendable {
    let context: RouteContext
    let readiness: Readiness
    /// The OpenAPI document (absent: 404).
    let openAPI: [UInt8]?

    private static let healthy = Array("{\"status\":\"ok\"}".utf8)

    func register(in router: inout Router<GatewayRoute>) {
        router.addAtOnce("GET", "/healthz") { _ in Responses.json(200, bytes: Self.healthy) }
        router.add("GET", "/readyz") { _ in await ready() }
        router.add("GET", "/metrics") { [metrics = context.metrics] _ in
            HTTPResponse(
                status: 200, headers: HTTPHeaders([("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]),
                body: .bytes(Array(metrics.render().utf8)))
        }
        router.add("GET", "/openapi.yaml") { [openAPI] _ in
            guard let openAPI else { throw APIError.notFound }
            return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/yaml")]), body: .bytes(openAPI))
        }
    }

    private func ready() async -> HTTPResponse {
        let results = await readiness.run()
        var checks = JSONText()
        checks.begin()
        for result in results { checks.field(result.name, .string(result.failure ?? "ok")) }
        checks.end()
        let checksJSON = String(decoding: checks.bytes, as: UTF8.self)
        if results.allSatisfy({ $0.failure == nil || $0.advisory }) {
            return Responses.json(200, bytes: Array("{\"status\":\"ready\",\"checks\":\(checksJSON)}".utf8))
        }
        var response = Responses.problem(APIError(.notReady, "A dependency does not answer."))
        if case .bytes(var body) = response.body {
            body.removeLast()
            body.append(contentsOf: Array(",\"checks\":\(checksJSON)}".utf8))
            response.body = .bytes(body)
        }
        response.headers.add("Retry-After", "5")
        return response
    }
}
