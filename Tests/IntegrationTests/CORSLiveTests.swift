import Foundation
import TestSupport
import Testing

@testable import Gateway
@testable import TransferGateway

/// CORS that works the first time, over a real socket: a preflight allows the headers the
/// browser asks for (tracing headers included), credentials when configured, and the HTTP
/// layer's own refusals carry CORS headers, `X-Request-Id` and their log line.
@Suite struct CORSLiveTests {
    static let origin = "http://localhost:5173"

    func gateway(credentials: Bool = false) throws -> LiveGateway {
        try LiveGateway {
            $0.corsOrigins = [Self.origin]
            $0.corsAllowCredentials = credentials
        }
    }

    @Test func aPreflightAllowsTheHeadersTheBrowserAsksFor() async throws {
        let gateway = try gateway(credentials: true)
        let client = try LoopbackClient(port: gateway.port)
        try client.send(
            "OPTIONS /v1/jobs HTTP/1.1\r\nHost: x\r\nOrigin: \(Self.origin)\r\n"
                + "Access-Control-Request-Method: POST\r\n"
                + "Access-Control-Request-Headers: authorization, content-type, traceparent, sentry-trace, baggage\r\n\r\n")
        let answer = try client.readResponse()
        #expect(answer.status == 200)
        #expect(answer.header("access-control-allow-origin") == Self.origin)
        #expect(answer.header("access-control-allow-credentials") == "true")
        let allowed = answer.header("access-control-allow-headers") ?? ""
        #expect(["traceparent", "sentry-trace", "baggage", "authorization"].allSatisfy(allowed.contains), "\(allowed)")
        // An ordinary answer exposes what a page needs to read.
        try client.send("GET /v1/jobs HTTP/1.1\r\nHost: x\r\nOrigin: \(Self.origin)\r\n\r\n")
        let unauthorized = try client.readResponse()
        #expect(unauthorized.status == 401 && unauthorized.header("access-control-allow-credentials") == "true")
        let exposed = unauthorized.header("access-control-expose-headers") ?? ""
        #expect(["Retry-After", "WWW-Authenticate", "Accept-Ranges", "ETag", "Location", "X-Request-Id"].allSatisfy(exposed.contains))
        await gateway.stop()
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: x\r\nOrigin: \(CORSLiveTests.origin)\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nOrigin: \(CORSLiveTests.origin)\r\nX-Big: \(String(repeating: "a", count: 17_000))\r\n\r\n", 431),
    ])
    func refusalsOfTheHTTPLayerCarryCORSAndARequestID(request: String, status: Int) async throws {
        let gateway = try gateway()
        let client = try LoopbackClient(port: gateway.port)
        try client.send(request)
        let answer = try client.readResponse()
        #expect(answer.status == status)
        #expect(answer.header("access-control-allow-origin") == Self.origin)
        let id = try #require(answer.header("x-request-id"))
        #expect(gateway.logs.all.contains { $0.contains("\"requestId\":\"\(id)\"") && $0.contains("\"status\":\(status)") })
        await gateway.stop()
    }

    /// `bucket-cors --apply` puts a rule the S3 server then answers browsers' preflights with:
    /// the gateway's origins allowed, `ETag` exposed, another origin not allowed.
    @Test func theBucketRuleLetsTheGatewaysOriginsReachS3() async throws {
        let configuration = try Configuration.fromEnvironment(ProcessInfo.processInfo.environment)
        let client = try configuration.makeS3Client()
        try await client.putBucketCors(xml: BucketCORSRule(origins: [Self.origin, "http://localhost:3000"]).xml)
        func preflight(_ origin: String) throws -> (Int, String) {
            let answer = try curl([
                "-X", "OPTIONS", "-D", "-", "-o", "/dev/null", "-H", "Origin: \(origin)",
                "-H", "Access-Control-Request-Method: PUT",
                "\(client.endpoint.url(encodedPath: "/" + client.endpoint.bucket + "/any-key"))",
            ])
            return (answer.status, answer.body.lowercased())
        }
        let (status, headers) = try preflight(Self.origin)
        #expect(status == 200 && headers.contains("access-control-allow-origin: \(Self.origin)"), "\(headers)")
        #expect(headers.contains("etag"), "ETag is exposed: \(headers)")
        let (_, other) = try preflight("http://evil.example")
        #expect(!other.contains("access-control-allow-origin: http://evil.example"))
    }
}
