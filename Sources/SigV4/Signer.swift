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
    private let keyCache: SigningKeyCache?

    /// `keyCache` spares the four chained HMACs of stage 3 while the date stays the same.
    public init(credentials: Credentials, region: String, service: String = "s3", keyCache: SigningKeyCache? = nil) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.keyCache = keyCache
    }

    /// `date/region/service/aws4_request`.
    public func scope(_ time: SigningTime) -> String {
        "\(time.date)/\(region)/\(service)/aws4_request"
    }

    private func appendScope(_ time: SigningTime, to out: inout [UInt8]) {
        out.append(contentsOf: time.date.utf8)
        out.append(UInt8(ascii: "/"))
        out.append(contentsOf: region.utf8)
        out.append(UInt8(ascii: "/"))
        out.append(contentsOf: service.utf8)
        out.append(contentsOf: "/aws4_request".utf8)
    }

    /// Stage 2: the string to sign.
    public func stringToSign(_ request: CanonicalRequest, time: SigningTime) -> String {
        stringToSign(request, canonicalQuery: request.canonicalQuery, time: time)
    }

    func stringToSign(_ request: CanonicalRequest, canonicalQuery: String, time: SigningTime) -> String {
        [Self.algorithm, time.dateTime, scope(time), Digest.hex(Digest.sha256(request.text(canonicalQuery: canonicalQuery)))]
            .joined(separator: "\n")
    }

    /// Stage 3: the signing key, HMAC chained over date, region, service and `aws4_request`.
    public func signingKey(_ time: SigningTime) -> [UInt8] {
        if let keyCache {
            return keyCache.key(date: time.date, region: region, service: service, secret: credentials.secretAccessKey) {
                deriveKey(time)
            }
        }
        return deriveKey(time)
    }

    private func deriveKey(_ time: SigningTime) -> [UInt8] {
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
        let (items, signature) = presign(method: method, encodedPath: encodedPath, query: query, headers: headers,
                                         expires: expires, time: time)
        return items + [("X-Amz-Signature", signature)]
    }

    /// The same, as the encoded query string of the URL: the canonical query (sorted, as AWS's
    /// SDKs send it) followed by `X-Amz-Signature`. Built as bytes: this runs for every
    /// presigned URL the gateway hands out.
    public func presignedQueryString(method: String, encodedPath: String, query: [(String, String)],
                                     headers: [(String, String)], expires: Int, time: SigningTime) -> String {
        if query.isEmpty {
            return presignedQueryStringWithoutQuery(method: method, encodedPath: encodedPath, headers: headers,
                                                    expires: expires, time: time)
        }
        let request = presignRequest(method: method, encodedPath: encodedPath, query: query, headers: headers,
                                     expires: expires, time: time)
        // Stage 1, canonical query: each side encoded, sorted by encoded name then value.
        var pairs: [(name: [UInt8], value: [UInt8])] = []
        pairs.reserveCapacity(request.query.count)
        for (name, value) in request.query {
            var n: [UInt8] = [], v: [UInt8] = []
            URIEncoding.append(name, to: &n)
            URIEncoding.append(value, to: &v)
            pairs.append((n, v))
        }
        pairs.sort { a, b in
            a.name == b.name ? a.value.lexicographicallyPrecedes(b.value) : a.name.lexicographicallyPrecedes(b.name)
        }
        var queryBytes: [UInt8] = []
        queryBytes.reserveCapacity(512)
        for (index, pair) in pairs.enumerated() {
            if index > 0 { queryBytes.append(UInt8(ascii: "&")) }
            queryBytes.append(contentsOf: pair.name)
            queryBytes.append(UInt8(ascii: "="))
            queryBytes.append(contentsOf: pair.value)
        }
        return signQuery(queryBytes, method: method, encodedPath: encodedPath,
                         canonicalHeaders: request.canonicalHeaders, time: time)
    }

    /// Stages 1 (rest of the canonical request) to 4 over an already-canonical query, as
    /// bytes; returns the URL's query string with the signature appended.
    private func signQuery(_ query: [UInt8], method: String, encodedPath: String,
                           canonicalHeaders: [(String, String)], time: SigningTime) -> String {
        var canonical: [UInt8] = []
        canonical.reserveCapacity(query.count + 256)
        canonical.append(contentsOf: method.utf8)
        canonical.append(0x0A)
        canonical.append(contentsOf: (encodedPath.isEmpty ? "/" : encodedPath).utf8)
        canonical.append(0x0A)
        canonical.append(contentsOf: query)
        canonical.append(0x0A)
        for (name, value) in canonicalHeaders {
            canonical.append(contentsOf: name.utf8)
            canonical.append(UInt8(ascii: ":"))
            canonical.append(contentsOf: value.utf8)
            canonical.append(0x0A)
        }
        canonical.append(0x0A)
        for (index, header) in canonicalHeaders.enumerated() {
            if index > 0 { canonical.append(UInt8(ascii: ";")) }
            canonical.append(contentsOf: header.0.utf8)
        }
        canonical.append(0x0A)
        canonical.append(contentsOf: Self.unsignedPayload.utf8)
        var stringToSign: [UInt8] = []
        stringToSign.reserveCapacity(160)
        stringToSign.append(contentsOf: "AWS4-HMAC-SHA256\n".utf8)
        stringToSign.append(contentsOf: time.dateTime.utf8)
        stringToSign.append(0x0A)
        appendScope(time, to: &stringToSign)
        stringToSign.append(0x0A)
        Digest.appendHex(Digest.sha256(canonical), to: &stringToSign)
        var out = query
        out.reserveCapacity(query.count + 81)
        out.append(contentsOf: "&X-Amz-Signature=".utf8)
        Digest.appendHex(Digest.hmacSHA256(key: signingKey(time), stringToSign), to: &out)
        return String(decoding: out, as: UTF8.self)
    }


    private func presign(method: String, encodedPath: String, query: [(String, String)], headers: [(String, String)],
                         expires: Int, time: SigningTime) -> ([(String, String)], String) {
        let request = presignRequest(method: method, encodedPath: encodedPath, query: query, headers: headers,
                                     expires: expires, time: time)
        return (request.query, signature(stringToSign(request, time: time), time: time))
    }

    private func presignRequest(method: String, encodedPath: String, query: [(String, String)],
                                headers: [(String, String)], expires: Int, time: SigningTime) -> CanonicalRequest {
        var items = query
        items.append(("X-Amz-Algorithm", Self.algorithm))
        items.append(("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(time))"))
        items.append(("X-Amz-Date", time.dateTime))
        items.append(("X-Amz-Expires", String(expires)))
        if let token = credentials.sessionToken { items.append(("X-Amz-Security-Token", token)) }
        let names = headers.count == 1 && headers[0].0.lowercased() == "host"
            ? "host"
            : CanonicalRequest(method: method, encodedPath: encodedPath, query: [], headers: headers,
                               payloadHash: Self.unsignedPayload).signedHeaders
        items.append(("X-Amz-SignedHeaders", names))
        return CanonicalRequest(method: method, encodedPath: encodedPath, query: items,
                                headers: headers, payloadHash: Self.unsignedPayload)
    }

    /// The common case (no query of the caller's): the `X-Amz-*` parameters are already in
    /// canonical order, so the canonical query is written straight out, without sorting.
    private func presignedQueryStringWithoutQuery(method: String, encodedPath: String, headers: [(String, String)],
                                                  expires: Int, time: SigningTime) -> String {
        let canonicalHeaders = CanonicalRequest(method: method, encodedPath: encodedPath, query: [], headers: headers,
                                                payloadHash: Self.unsignedPayload).canonicalHeaders
        var query: [UInt8] = []
        query.reserveCapacity(384)
        query.append(contentsOf: "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=".utf8)
        URIEncoding.append(credentials.accessKeyID, to: &query)
        query.append(contentsOf: "%2F".utf8)
        query.append(contentsOf: time.date.utf8)
        query.append(contentsOf: "%2F".utf8)
        URIEncoding.append(region, to: &query)
        query.append(contentsOf: "%2F".utf8)
        URIEncoding.append(service, to: &query)
        query.append(contentsOf: "%2Faws4_request&X-Amz-Date=".utf8)
        query.append(contentsOf: time.dateTime.utf8)
        query.append(contentsOf: "&X-Amz-Expires=".utf8)
        query.append(contentsOf: String(expires).utf8)
        if let token = credentials.sessionToken {
            query.append(contentsOf: "&X-Amz-Security-Token=".utf8)
            URIEncoding.append(token, to: &query)
        }
        query.append(contentsOf: "&X-Amz-SignedHeaders=".utf8)
        for (index, header) in canonicalHeaders.enumerated() {
            if index > 0 { query.append(contentsOf: "%3B".utf8) }
            URIEncoding.append(header.0, to: &query)
        }
        return signQuery(query, method: method, encodedPath: encodedPath, canonicalHeaders: canonicalHeaders, time: time)
    }
}
