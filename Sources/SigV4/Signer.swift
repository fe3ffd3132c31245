import Crypto

/// AWS Signature Version 4, in its stages: canonical request → string to sign → signing key →
/// signature. Pure: time, credentials, region and service are all parameters; no I/O.
public struct Signer: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public let credentials: Credentials
    public let region: String
    public let service: String

    public init(credentials: Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// `date/region/service/aws4_request`.
    public func scope(_ time: SigningTime) -> String {
        "\(time.date)/\(region)/\(service)/aws4_request"
    }

    /// Stage 2: the string to sign.
    public func stringToSign(_ request: CanonicalRequest, time: SigningTime) -> String {
        [Self.algorithm, time.dateTime, scope(time), Digest.hex(Digest.sha256(request.text))].joined(separator: "\n")
    }

    /// Stage 3: the signing key, HMAC chained over date, region, service and `aws4_request`.
    public func signingKey(_ time: SigningTime) -> [UInt8] {
        let kDate = Digest.hmacSHA256(key: "AWS4" + credentials.secretAccessKey, time.date)
        let kRegion = Digest.hmacSHA256(key: kDate, region)
        let kService = Digest.hmacSHA256(key: kRegion, service)
        return Digest.hmacSHA256(key: kService, "aws4_request")
    }

    /// Stage 4: the hex signature of a string to sign.
    public func signature(_ stringToSign: String, time: SigningTime) -> String {
        Digest.hex(Digest.hmacSHA256(key: signingKey(time), stringToSign))
    }

    /// Header signing: returns the fields to add to the request (`X-Amz-Date`,
    /// `X-Amz-Content-Sha256`, `X-Amz-Security-Token` when present, `Authorization`).
    /// `headers` must include `host` and any other header to be signed.
    public func signedHeaders(method: String, encodedPath: String, query: [(String, String)],
                              headers: [(String, String)], payloadHash: String,
                              time: SigningTime) -> [(String, String)] {
        var added: [(String, String)] = [("x-amz-date", time.dateTime), ("x-amz-content-sha256", payloadHash)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        let request = CanonicalRequest(method: method, encodedPath: encodedPath, query: query,
                                       headers: headers + added, payloadHash: payloadHash)
        let signature = signature(stringToSign(request, time: time), time: time)
        let authorization = "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope(time)), "
            + "SignedHeaders=\(request.signedHeaders), Signature=\(signature)"
        return added + [("Authorization", authorization)]
    }

    /// Query presigning: returns the full query (the caller's pairs plus the `X-Amz-*` ones,
    /// signature last) for a URL valid `expires` seconds from `time`. The payload is unsigned.
    public func presignedQuery(method: String, encodedPath: String, query: [(String, String)],
                               headers: [(String, String)], expires: Int,
                               time: SigningTime) -> [(String, String)] {
        var items = query
        items.append(("X-Amz-Algorithm", Self.algorithm))
        items.append(("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(time))"))
        items.append(("X-Amz-Date", time.dateTime))
        items.append(("X-Amz-Expires", String(expires)))
        if let token = credentials.sessionToken { items.append(("X-Amz-Security-Token", token)) }
        let probe = CanonicalRequest(method: method, encodedPath: encodedPath, query: [],
                                     headers: headers, payloadHash: Self.unsignedPayload)
        items.append(("X-Amz-SignedHeaders", probe.signedHeaders))
        let request = CanonicalRequest(method: method, encodedPath: encodedPath, query: items,
                                       headers: headers, payloadHash: Self.unsignedPayload)
        items.append(("X-Amz-Signature", signature(stringToSign(request, time: time), time: time)))
        return items
    }
}
