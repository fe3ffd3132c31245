import Foundation
import HTTPServer
import Postgres
import S3
import SigV4
import Crypto

/// The composition root: builds the real parts from one `Configuration` and wires them.
public struct GatewayApp: Sendable {
    public let configuration: Configuration
    public let logger: Logger
    public let metrics: Metrics
    public let server: HTTPServer

    /// Fails with a `Configuration.Invalid` naming the variable when a setting cannot be used.
    public init(configuration: Configuration, logger: Logger) throws(Configuration.Invalid) {
        self.configuration = configuration
        self.logger = logger
        let metrics = Metrics()
        self.metrics = metrics

        let endpoint: S3Endpoint
        do {
            endpoint = try S3Endpoint.parse(url: configuration.s3Endpoint, bucket: configuration.s3Bucket ?? "",
                                            region: configuration.s3Region, pathStyle: configuration.s3PathStyle,
                                            accelerate: configuration.s3Accelerate)
        } catch {
            throw Configuration.Invalid(variable: "GATEWAY_S3_ENDPOINT", reason: "\(error)")
        }
        let credentials = Credentials(accessKeyID: configuration.s3AccessKeyID ?? "",
                                      secretAccessKey: configuration.s3SecretAccessKey ?? "",
                                      sessionToken: configuration.s3SessionToken)
        let s3 = S3Client(endpoint: endpoint, credentials: credentials, now: { Int(Date().timeIntervalSince1970) })
        var checks: [any DependencyCheck] = []
        if let url = configuration.databaseURL { checks.append(PostgresCheck(probe: PostgresProbe(url: url))) }
        checks.append(S3Check(client: s3))

        var router = Router<RouteHandler>()
        OperationsRoutes(readiness: Readiness(checks: checks, timeout: 2), metrics: metrics,
                         openAPI: Self.loadOpenAPI(configuration.openAPIPath))
            .register(in: &router)

        let prefix = Digest.hex(Digest.randomBytes(3)) + "-"
        let responder = GatewayResponder(router: router, cors: CORS(origins: configuration.corsOrigins),
                                         logger: logger, metrics: metrics, instancePrefix: prefix)
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxConnections = configuration.maxConnections
        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: http, responder: responder)
        } catch {
            throw Configuration.Invalid(variable: "GATEWAY_HOST", reason: "\(error)")
        }
        self.server = server
        metrics.registerGauge(name: "gateway_http_open_connections", help: "Open HTTP connections.") {
            server.openConnections
        }
    }

    /// The OpenAPI document: `GATEWAY_OPENAPI_PATH`, else `openapi.yaml` in the working folder,
    /// beside the executable's package root, or where the container image puts it.
    static func loadOpenAPI(_ explicit: String?) -> [UInt8]? {
        var candidates: [String] = []
        if let explicit { candidates.append(explicit) }
        candidates.append("openapi.yaml")
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("../../openapi.yaml").path)
        candidates.append(executable.deletingLastPathComponent().appendingPathComponent("../../../openapi.yaml").path)
        candidates.append("/usr/share/transfer-gateway/openapi.yaml")
        for path in candidates {
            if let data = FileManager.default.contents(atPath: path) { return Array(data) }
        }
        return nil
    }
}
