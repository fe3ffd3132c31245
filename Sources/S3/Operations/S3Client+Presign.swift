import SigV4

extension S3Client {
    /// A presigned URL (SigV4 query signing, unsigned payload) for `method` on `key`, valid
    /// `expires` seconds. `headers` are signed too, and the client must send them unchanged.
    /// `endpointOverride` is the public endpoint clients reach S3 by, when it differs.
    public func presignedURL(
        method: String, key: String, expires: Int, headers: [(String, String)] = [],
        query: [(String, String)] = [], at time: Int? = nil,
        endpointOverride: S3Endpoint? = nil
    ) -> String {
        var url: [UInt8] = []
        appendPresignedURL(
            to: &url, method: method, key: key, expires: expires, headers: headers, query: query,
            at: time, endpointOverride: endpointOverride)
        return String(decoding: url, as: UTF8.self)
    }

    /// The same URL, appended to `out` (an answer being written). Every byte of it is ASCII
    /// and none needs escaping in a JSON string: the scheme and host were checked when the
    /// endpoint was parsed, the bucket when it was configured, and the rest is URI-encoded.
    public func appendPresignedURL(
        to out: inout [UInt8], method: String, key: String, expires: Int,
        headers: [(String, String)] = [], query: [(String, String)] = [],
        at time: Int? = nil, endpointOverride: S3Endpoint? = nil
    ) {
        let time = SigningTime(secondsSince1970: time ?? currentTime())
        if let target = endpointOverride {
            // A signer depends on the region, not the host: the own one serves a public
            // endpoint in the same region without a new one being made per URL.
            let signer =
                target.region == endpoint.region
                ? ownSigner : Signer(credentials: signingCredentials, region: target.region, keyCache: keyCache)
            Self.appendPresignedURL(
                to: &out, method: method, key: key, expires: expires, headers: headers, query: query,
                time: time, target: target, host: target.hostHeader, signer: signer)
        } else {
            Self.appendPresignedURL(
                to: &out, method: method, key: key, expires: expires, headers: headers, query: query,
                time: time, target: endpoint, host: ownHostHeader, signer: ownSigner)
        }
    }

    private static func appendPresignedURL(
        to out: inout [UInt8], method: String, key: String, expires: Int,
        headers: [(String, String)], query: [(String, String)], time: SigningTime,
        target: S3Endpoint, host: String, signer: Signer
    ) {
        // One buffer for the whole URL: the query alone is some 400 bytes.
        out.reserveCapacity(out.count + target.scheme.utf8.count + host.utf8.count + key.utf8.count * 3 + 600)
        out.append(contentsOf: target.scheme.utf8)
        out.append(contentsOf: "://".utf8)
        out.append(contentsOf: host.utf8)
        let pathStart = out.count
        target.appendEncodedPath(key: key, to: &out)
        let path = pathStart..<out.count
        out.append(UInt8(ascii: "?"))
        signer.appendPresignedQuery(
            to: &out, method: method, encodedPathIn: path, query: query, host: host, headers: headers,
            expires: expires, time: time)
    }
}
