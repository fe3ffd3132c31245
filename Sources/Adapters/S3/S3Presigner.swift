import Gateway
import S3
import SigV4

/// The `Presigner` port over the S3 client's SigV4 query signing, for the endpoint clients reach
/// S3 by (`GATEWAY_S3_PUBLIC_ENDPOINT` when it differs from the gateway's own).
public struct S3Presigner: Presigner {
    let client: S3Client
    let publicEndpoint: S3Endpoint?

    public init(client: S3Client, publicEndpoint: S3Endpoint?) {
        self.client = client
        self.publicEndpoint = publicEndpoint
    }

    public var credentialsExpiration: Int? { client.credentialsExpiration }

    public func appendURL(
        to out: inout [UInt8], method: String, key: String, expires: Int, headers: [(String, String)],
        query: [(String, String)], at: Int
    ) {
        client.appendPresignedURL(
            to: &out, method: method, key: key, expires: expires, headers: headers, query: query,
            at: at, endpointOverride: publicEndpoint)
    }

    public func postForm(
        key: String, fields: [(String, String)], maxSize: Int64, expires: Int, at: Int
    ) -> (url: String, fields: [(String, String)]) {
        let endpoint = publicEndpoint ?? client.endpoint
        let policy = PostPolicy(
            signer: Signer(credentials: client.signingCredentials, region: endpoint.region),
            bucket: endpoint.bucket, key: key, fields: fields, maxSize: maxSize,
            expires: expires, time: SigningTime(secondsSince1970: at))
        return (endpoint.url(encodedPath: endpoint.style == .path ? "/\(endpoint.bucket)" : "/"), policy.fields)
    }
}
