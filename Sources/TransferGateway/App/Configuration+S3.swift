import Adapters
import Foundation
import S3
import SigV4

extension Configuration {
    /// The bucket's endpoint from the `GATEWAY_S3_*` settings.
    public func s3EndpointValue() throws(Invalid) -> S3Endpoint {
        do {
            try S3Endpoint.checkBucket(s3Bucket ?? "")
        } catch {
            throw Invalid(variable: "GATEWAY_S3_BUCKET", reason: "\(error)")
        }
        do {
            return try S3Endpoint.parse(
                url: s3Endpoint, bucket: s3Bucket ?? "", region: s3Region,
                pathStyle: s3PathStyle, accelerate: s3Accelerate)
        } catch {
            throw Invalid(variable: "GATEWAY_S3_ENDPOINT", reason: "\(error)")
        }
    }

    /// The endpoint written into presigned URLs, when clients reach S3 by another name.
    public func s3PublicEndpointValue() throws(Invalid) -> S3Endpoint? {
        guard let url = s3PublicEndpoint else { return nil }
        do {
            return try S3Endpoint.parse(url: url, bucket: s3Bucket ?? "", region: s3Region, pathStyle: s3PathStyle, accelerate: false)
        } catch {
            throw Invalid(variable: "GATEWAY_S3_PUBLIC_ENDPOINT", reason: "\(error)")
        }
    }

    public var s3Credentials: Credentials {
        Credentials(
            accessKeyID: s3AccessKeyID ?? "", secretAccessKey: s3SecretAccessKey ?? "", sessionToken: s3SessionToken,
            expiration: s3CredentialExpiration)
    }

    /// The S3 client for these settings, on the wall clock, with the static credentials (or
    /// none yet, when they come from the rest of the chain: `makeS3ClientFetchingCredentials`).
    public func makeS3Client() throws(Invalid) -> S3Client {
        var options = CurlOptions()
        options.sendFilesDirectly = s3Sendfile
        return S3Client(endpoint: try s3EndpointValue(), credentials: initialS3Credentials, options: options, now: GatewayApp.wallClock)
    }

    /// The S3 client with its first credentials fetched from the chain (for one-shot commands,
    /// which run no refresher).
    public func makeS3ClientFetchingCredentials() async throws -> S3Client {
        let client = try makeS3Client()
        if let source = s3CredentialsSource, !source.isFixed {
            do {
                client.useCredentials(try await client.credentialsFetcher(for: source).fetch())
            } catch {
                throw Invalid(
                    variable: "GATEWAY_S3_ACCESS_KEY_ID",
                    reason: "is not set, and \(source.name) credentials failed: \(CredentialsRefresher.describe(error))")
            }
        }
        return client
    }
}
