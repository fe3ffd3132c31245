import SigV4

extension S3Client {
    /// A presigned URL (SigV4 query signing, unsigned payload) for `method` on `key`, valid
    /// `expires` seconds. `headers` are signed too, and the client must send them unchanged.
    /// `endpointOverride` is the public endpoint clients reach S3 by, when it differs.
    public func presignedURL(method: String, key: String, expires: Int, headers: [(String, String)] = [],
                             query: [(String, String)] = [], at time: Int? = nil,
                             endpointOverride: S3Endpoint? = nil) -> String {
        let target = endpointOverride ?? endpoint
        let path = target.encodedPath(key: key)
        let signer = Signer(credentials: signingCredentials, region: target.region, keyCache: keyCache)
        let host = endpointOverride == nil ? ownHostHeader : target.hostHeader
        // One buffer for the whole URL: the query alone is some 400 bytes.
        var url: [UInt8] = []
        url.reserveCapacity(target.scheme.utf8.count + host.utf8.count + path.utf8.count + 512)
        url.append(contentsOf: target.scheme.utf8)
        url.append(contentsOf: "://".utf8)
        url.append(contentsOf: host.utf8)
        url.append(contentsOf: path.utf8)
        url.append(UInt8(ascii: "?"))
        var signed = [("Host", host)]
        signed.append(contentsOf: headers)
        signer.appendPresignedQuery(to: &url, method: method, encodedPath: path, query: query, headers: signed,
                                    expires: expires, time: SigningTime(secondsSince1970: time ?? currentTime()))
        return String(decoding: url, as: UTF8.self)
    }
}
