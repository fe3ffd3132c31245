import Dispatch
import SigV4

/// The S3 operations the gateway uses, signed with SigV4 and sent with libcurl. Blocking
/// libcurl calls run on the client's own queue, never on Swift's cooperative pool.
public final class S3Client: Sendable {
    public let endpoint: S3Endpoint
    private let credentials: Credentials
    private let queue = DispatchQueue(label: "s3.client", attributes: .concurrent)
    private let now: @Sendable () -> Int

    public init(endpoint: S3Endpoint, credentials: Credentials, now: @escaping @Sendable () -> Int) {
        self.endpoint = endpoint
        self.credentials = credentials
        self.now = now
    }

    /// HeadBucket: true when the bucket answers 200 to our signed request. Used by /readyz.
    public func headBucket(timeout: Double) async throws -> Int {
        let response = try await send(method: "HEAD", key: nil, timeout: timeout)
        return response.status
    }

    private func send(method: String, key: String?, timeout: Double) async throws -> CurlEasy.Response {
        let path = endpoint.encodedPath(key: key)
        let signer = Signer(credentials: credentials, region: endpoint.region)
        let time = SigningTime(secondsSince1970: now())
        let host = endpoint.hostHeader
        let signed = signer.signedHeaders(method: method, encodedPath: path, query: [], headers: [("Host", host)],
                                          payloadHash: Signer.emptyPayloadHash, time: time)
        let url = endpoint.url(encodedPath: path)
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result {
                    try CurlEasy.perform(method: method, url: url, headers: signed, timeout: timeout)
                })
            }
        }
    }
}
