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
        let queryString = signer.presignedQueryString(method: method, encodedPath: path, query: query,
                                                      headers: [("Host", host)] + headers, expires: expires,
                                                      time: SigningTime(secondsSince1970: time ?? currentTime()))
        return target.scheme + "://" + host + path + "?" + queryString
    }
}
