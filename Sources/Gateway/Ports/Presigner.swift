/// Signs URLs a frontend uses to reach S3 directly (the S3 adapter implements it with SigV4;
/// the routes know nothing of signing). Every URL is written into an answer being built: its
/// bytes are ASCII and need no escaping in a JSON string.
public protocol Presigner: Sendable {
    /// When the S3 credentials in use now stop working (seconds since 1970), if they do: read
    /// on every presign, so refreshed credentials lengthen the lifetimes at once.
    var credentialsExpiration: Int? { get }

    /// Appends a presigned URL (query signing, unsigned payload) for `method` on `key`, valid
    /// `expires` seconds from `at`; `headers` are signed too and the client must send them.
    func appendURL(
        to out: inout [UInt8], method: String, key: String, expires: Int, headers: [(String, String)],
        query: [(String, String)], at: Int)

    /// A browser form upload (POST policy) for `key`: the URL to post to and the form fields,
    /// the policy pinning the key, each of `fields` (content type, metadata…) to its value,
    /// and a `content-length-range`.
    func postForm(
        key: String, fields: [(String, String)], maxSize: Int64, expires: Int, at: Int
    ) -> (url: String, fields: [(String, String)])
}

extension Presigner {
    /// `seconds`, cut to what is left of temporary credentials: no presigned URL outlives
    /// them. 503 once they have ended (or before the first have been fetched).
    func lifetime(atMost seconds: Int, now: Int) throws(APIError) -> Int {
        guard let end = credentialsExpiration else { return seconds }
        guard end > now else {
            throw APIError(
                .serviceUnavailable, "The gateway has no usable S3 credentials right now (expired, or not fetched yet).", retryAfter: 5)
        }
        return min(seconds, end - now)
    }

    /// The URL as a string.
    func url(
        method: String, key: String, expires: Int, headers: [(String, String)] = [], query: [(String, String)] = [],
        at: Int
    ) -> String {
        var out: [UInt8] = []
        appendURL(to: &out, method: method, key: key, expires: expires, headers: headers, query: query, at: at)
        return String(decoding: out, as: UTF8.self)
    }
}
