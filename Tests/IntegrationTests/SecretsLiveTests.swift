import Auth
import Foundation
import S3
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// Tokens, the S3 and JWT secrets and URL signatures never reach a log line, the metrics or an
/// error body, whatever the requests carry (good and bad tokens, presigned URLs in bodies,
/// signatures in query strings).
extension JobTableTests {
    @Suite struct SecretsLiveTests {
        @Test func noSecretInLogsMetricsOrErrors() async throws {
            let gateway = try LiveGateway()
            let c = gateway.configuration
            let token = gateway.token("alice")
            let expired = gateway.token("alice", ttl: -3600)
            let tampered = String(token.dropLast(4)) + "AAAA"
            var secrets = [token, expired, tampered, try #require(c.jwtSecret), try #require(c.s3SecretAccessKey)]
            var bodies: [String] = []
            func keep(_ answer: LiveGateway.Answer) { bodies.append(String(decoding: answer.body, as: UTF8.self)) }

            // Presigned URLs: their signatures are secrets once handed out.
            for operation in ["get", "put"] {
                let answer = try await gateway.request(
                    "POST", "/v1/presign", token: token,
                    json: [
                        "operation": operation, "accessLevel": "private", "key": "secrets/a.txt",
                    ])
                let url = try #require(answer.json["url"] as? String)
                let signature = try #require(URLComponents(string: url)?.queryItems?.first { $0.name == "X-Amz-Signature" }?.value)
                secrets.append(signature)
                // A signature sent back in a query string and a body.
                keep(try await gateway.request("GET", "/v1/jobs?cursor=\(signature)&X-Amz-Signature=\(signature)", token: token))
                keep(
                    try await gateway.request(
                        "POST", "/v1/jobs", token: token,
                        json: [
                            "type": "import", "sourceUrl": url, "accessLevel": "private", "key": "secrets/\(operation).txt",
                        ]))
            }
            // Bad tokens, in the header and where no header is expected.
            for bad in [expired, tampered, "Basic \(token)", token + token] {
                keep(
                    try await gateway.request("GET", "/v1/jobs", headers: ["Authorization": bad.hasPrefix("Basic") ? bad : "Bearer \(bad)"])
                )
            }
            keep(try await gateway.request("GET", "/v1/jobs?token=\(token)", token: nil))
            keep(
                try await gateway.request(
                    "POST", "/v1/tus/", token: token,
                    headers: [
                        "Tus-Resumable": "1.0.0", "Upload-Length": "1",
                        "Upload-Metadata": "key \(Data(token.utf8).base64EncodedString())",
                    ]))
            keep(try await gateway.request("GET", "/metrics"))
            // Let the import jobs run (they use the presigned URLs) so their log lines exist too.
            gateway.app.worker?.start()
            try await Task.sleep(for: .milliseconds(800))
            await gateway.app.worker?.stop()
            await gateway.stop()

            let logs = gateway.logs.all
            #expect(logs.count >= 12)
            for secret in secrets where !secret.isEmpty {
                let shown = String(secret.prefix(6)) + "…"
                #expect(!logs.contains { $0.contains(secret) }, "a log line holds \(shown)")
                #expect(!bodies.contains { $0.contains(secret) }, "an error or metrics body holds \(shown)")
            }
        }
    }
}
