import Foundation
import S3
import SigV4
import Testing

@testable import Adapters
@testable import TransferGateway

/// Each provider of the chain fetched over real HTTP from the loopback stand-in
/// (scripts/credentials_standin.py), and the credentials used against SeaweedFS; refusals say
/// what happened without the token that was refused.
@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"))
struct CredentialsFetcherLiveTests {
    func client() throws -> S3Client {
        var c = try Configuration.fromEnvironment(liveEnvironment)
        c.s3AccessKeyID = nil
        c.s3SecretAccessKey = nil
        c.credentialsChain = CredentialsChainSettings()
        return try c.makeS3Client()
    }

    @Test func instanceMetadataCredentialsSignForSeaweedFS() async throws {
        let standIn = try CredentialsStandIn(lifetime: 60)
        defer { standIn.stop() }
        let client = try client()
        #expect(client.credentialsExpiration == 0, "nothing usable before the first fetch")
        let credentials = try await client.credentialsFetcher(for: .instanceMetadata(endpoint: "http://127.0.0.1:\(standIn.port)")).fetch()
        #expect(credentials.accessKeyID == standIn.keys[0].0 && credentials.sessionToken == nil)
        let left = (credentials.expiration ?? 0) - Int(Date().timeIntervalSince1970)
        #expect((55...61).contains(left))
        client.useCredentials(credentials)
        #expect(try await client.headBucket(timeout: 5) == 200)
        #expect(try await standIn.stats()["imds"] == 1)
    }

    @Test func refusalsNameTheProviderAndStatusOnly() async throws {
        let standIn = try CredentialsStandIn(lifetime: 60)
        defer { standIn.stop() }
        let client = try client()
        let wrongToken = "Bearer wrong-\(UUID().uuidString)"
        let container = CredentialsSource.Container(url: "http://127.0.0.1:\(standIn.port)/ecs/credentials", authorizationToken: wrongToken)
        await #expect(throws: CredentialsFetcher.Failure("the container endpoint answered 401")) {
            try await client.credentialsFetcher(for: .container(container)).fetch()
        }
        let file = NSTemporaryDirectory() + "web-token-\(UUID().uuidString)"
        try "not-the-token".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let sts = CredentialsSource.WebIdentity(
            tokenFile: file, roleARN: "arn:aws:iam::0:role/r", sessionName: "s", endpoint: "http://127.0.0.1:\(standIn.port)")
        await #expect(throws: CredentialsFetcher.Failure("STS answered 400 (InvalidIdentityToken)")) {
            try await client.credentialsFetcher(for: .webIdentity(sts)).fetch()
        }
        let missing = CredentialsSource.WebIdentity(
            tokenFile: file + ".missing", roleARN: "r", sessionName: "s", endpoint: "http://127.0.0.1:1")
        await #expect(throws: CredentialsFetcher.Failure("cannot read the web identity token file")) {
            try await client.credentialsFetcher(for: .webIdentity(missing)).fetch()
        }
        // Nothing listens on port 1: no answer, quickly.
        let started = Date()
        await #expect(throws: CredentialsFetcher.Failure.self) {
            try await client.credentialsFetcher(for: .instanceMetadata(endpoint: "http://127.0.0.1:1")).fetch()
        }
        #expect(Date().timeIntervalSince(started) < 2)
    }
}
