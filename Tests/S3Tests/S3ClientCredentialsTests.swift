import Testing

@testable import S3
@testable import SigV4

/// Credentials replaced while the client is in use: what is signed next, and the expiry
/// presigning reads, follow at once.
struct S3ClientCredentialsTests {
    @Test func replacedCredentialsSignTheNextURL() throws {
        let endpoint = try S3Endpoint.parse(
            url: "http://127.0.0.1:9000", bucket: "b", region: "us-east-1", pathStyle: true, accelerate: false)
        let client = S3Client(
            endpoint: endpoint, credentials: Credentials(accessKeyID: "", secretAccessKey: "", expiration: 0), now: { 1_800_000_000 })
        #expect(client.credentialsExpiration == 0)
        client.useCredentials(Credentials(accessKeyID: "FIRSTKEY", secretAccessKey: "s1", expiration: 1_800_000_120))
        let first = client.presignedURL(method: "GET", key: "k", expires: 60)
        #expect(first.contains("X-Amz-Credential=FIRSTKEY%2F") && client.credentialsExpiration == 1_800_000_120)
        client.useCredentials(Credentials(accessKeyID: "SECONDKEY", secretAccessKey: "s2", sessionToken: "tok", expiration: 1_800_000_240))
        let second = client.presignedURL(method: "GET", key: "k", expires: 60)
        #expect(second.contains("X-Amz-Credential=SECONDKEY%2F") && second.contains("X-Amz-Security-Token=tok"))
        #expect(client.signingCredentials.accessKeyID == "SECONDKEY" && client.credentialsExpiration == 1_800_000_240)
        // Same date and region, another secret: the cached signing key is not reused.
        let signature = { (url: String) in url.split(separator: "=").last.map(String.init) ?? "" }
        client.useCredentials(Credentials(accessKeyID: "SECONDKEY", secretAccessKey: "s3", sessionToken: "tok", expiration: 1_800_000_240))
        #expect(signature(client.presignedURL(method: "GET", key: "k", expires: 60)) != signature(second))
    }
}
