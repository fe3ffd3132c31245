import Foundation
import Postgres
import S3
import SigV4
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Live tests against the PostgreSQL and SeaweedFS started by scripts/stack.sh. Switched on by
/// GATEWAY_LIVE_TESTS=1 (scripts/test.sh sets it); they never stand in a mock for either.
let liveEnvironment = ProcessInfo.processInfo.environment
let liveTestsEnabled = liveEnvironment["GATEWAY_LIVE_TESTS"] == "1"

@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"))
struct LiveDependencyTests {
    func configuration() throws -> Configuration {
        try Configuration.fromEnvironment(liveEnvironment)
    }

    @Test func postgresAnswers() async throws {
        let url = try #require(try configuration().databaseURL)
        let result = await PostgresProbe(url: url).check(timeout: 2)
        if case .failure(let error) = result { Issue.record("\(error)") }
    }

    @Test func postgresWithWrongPasswordFailsWithoutLeakingIt() async throws {
        let url = try #require(try configuration().databaseURL)
        guard let at = url.firstIndex(of: "@"), let colon = url[..<at].lastIndex(of: ":") else { return }
        let wrong = String(url[...colon]) + "not-the-password" + String(url[at...])
        let result = await PostgresProbe(url: wrong).check(timeout: 2)
        guard case .failure(let error) = result else { Issue.record("a wrong password connected"); return }
        #expect(!error.description.contains("not-the-password"))
    }

    @Test func signedHeadBucketAnswers200AndAWrongSecret403() async throws {
        let c = try configuration()
        let endpoint = try S3Endpoint.parse(
            url: c.s3Endpoint, bucket: c.s3Bucket ?? "", region: c.s3Region,
            pathStyle: c.s3PathStyle, accelerate: false)
        let now: @Sendable () -> Int = { Int(Date().timeIntervalSince1970) }
        let good = S3Client(
            endpoint: endpoint,
            credentials: Credentials(
                accessKeyID: c.s3AccessKeyID ?? "",
                secretAccessKey: c.s3SecretAccessKey ?? ""), now: now)
        #expect(try await good.headBucket(timeout: 5) == 200)
        let bad = S3Client(
            endpoint: endpoint,
            credentials: Credentials(
                accessKeyID: c.s3AccessKeyID ?? "",
                secretAccessKey: "wrong"), now: now)
        #expect(try await bad.headBucket(timeout: 5) == 403)
    }

    @Test func readyzIsReadyWithTheRealStackAndNotReadyWhenPostgresIsUnreachable() async throws {
        var c = try configuration()
        c.port = 0
        let app = try GatewayApp(configuration: c, logger: Logger(level: .error, sink: MemorySink()))
        let port = try app.server.start()
        let (data, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/readyz")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: data, as: UTF8.self))")
        await app.server.shutdown(grace: 1)

        c.databaseURL = "postgres://nobody@127.0.0.1:1/none"
        let broken = try GatewayApp(configuration: c, logger: Logger(level: .error, sink: MemorySink()))
        let brokenPort = try broken.server.start()
        let (body, notReady) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(brokenPort)/readyz")!)
        #expect((notReady as? HTTPURLResponse)?.statusCode == 503)
        #expect(String(decoding: body, as: UTF8.self).contains("\"postgres\":\"unreachable\""))
        await broken.server.shutdown(grace: 1)
    }
}
