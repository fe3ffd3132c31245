import Crypto

/// AWS Signature Version 4, in its stages: canonical request → string to sign → signing key →
/// signature. Pure: time, credentials, region and service are all parameters; no I/O.
///
/// A class, immutable: a signer is made once per set of credentials and handed to every
/// request, and passing one reference costs less than copying its strings and arrays.
public final class Signer: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public let credentials: Credentials
    public let region: String
    public let service: String
    private let keyCache: SigningKeyCache?
    /// What a presigned query repeats for these credentials, encoded once: the text before
    /// the date in `X-Amz-Credential`, and after it up to the `X-Amz-Date` value.
    /// (Appended through `withUnsafeBufferPointer`: appending an array takes a reference to
    /// it, and one signer's arrays are shared by every thread that signs.)
    let credentialPrefix: [UInt8]
    let credentialSuffix: [UInt8]
    /// `/region/service/aws4_request`, the scope after its date.
    let scopeSuffix: [UInt8]

    /// `keyCache` spares the four chained HMACs of stage 3 while the date stays the same.
    public init(credentials: Credentials, region: String, service: String = "s3", keyCache: SigningKeyCache? = nil) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.keyCache = keyCache
        var prefix = Array("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=".utf8)
        URIEncoding.append(credentials.accessKeyID, to: &prefix)
        prefix.append(contentsOf: "%2F".utf8)
        credentialPrefix = prefix
        var suffix = Array("%2F".utf8)
        URIEncoding.append(region, to: &suffix)
        suffix.append(contentsOf: "%2F".utf8)
        URIEncoding.append(service, to: &suffix)
        suffix.append(contentsOf: "%2Faws4_request&X-Amz-Date=".utf8)
        credentialSuffix = suffix
        scopeSuffix = Array("/\(region)/\(service)/aws4_request".utf8)
    }

    /// `date/region/service/aws4_request`.
    public func scope(_ time: SigningTime) -> String {
        "\(time.date)/\(region)/\(service)/aws4_request"
    }

    private func appendScope(_ time: SigningTime, to out: inout [UInt8]) {
        time.appendDate(to: &out)
        scopeSuffix.withUnsafeBufferPointer { out.append(contentsOf: $0) }
    }

    /// Stage 2: the string to sign.
    public func stringToSign(_ request: CanonicalRequest, time: SigningTime) -> String {
        stringToSign(request, canonicalQuery: request.canonicalQuery, time: time)
    }

    func stringToSign(_ request: CanonicalRequest, canonicalQuery: String, time: SigningTime) -> String {
        [Self.algorithm, time.dateTime, scope(time), Digest.hex(Digest.sha256(request.text(canonicalQuery: canonicalQuery)))]
            .joined(separator: "\n")
    }

    /// Stage 3, the signing key (HMAC chained over date, region, service and `aws4_request`),
    /// ready for HMAC: from the cache when there is one.
    func preparedKey(_ time: SigningTime) -> HMACKey {
        guard let keyCache else { return HMACKey(deriveKey(time)) }
        return keyCache.key(
            time, region: region, service: service, secret: credentials.secretAccessKey,
            derive: { HMACKey(deriveKey(time)) })
    }

    private func deriveKey(_ time: SigningTime) -> [UInt8] {
        let kDate = Digest.hmacSHA256(key: "AWS4" + credentials.secretAccessKey, time.date)
        let kRegion = Digest.hmacSHA256(key: kDate, region)
        let kService = Digest.hmacSHA256(key: kRegion, service)
        return Digest.hmacSHA256(key: kService, "aws4_request")
    }

    /// Stage 4: the hex signature of a string to sign.
    public func signature(_ stringToSign: String, time: SigningTime) -> String {
        Digest.hex(preparedKey(time).authenticate(stringToSign))
    }

    /// Header signing: returns the fields to add to the request (`X-Amz-Date`,
    /// `X-Amz-Content-Sha256`, `X-Amz-Security-Token` when present, `Authorization`).
    /// `headers` must include `host` and any other header to be signed.
    public func signedHeaders(
        method: String, encodedPath: String, query: [(String, String)],
        headers: [(String, String)], payloadHash: String,
        time: SigningTime
    ) -> [(String, String)] {
        var added: [(String, String)] = [("x-amz-date", time.dateTime), ("x-amz-content-sha256", payloadHash)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        let request = CanonicalRequest(
            method: method, encodedPath: encodedPath, query: query,
            headers: headers + added, payloadHash: payloadHash)
        let signature = signature(stringToSign(request, time: time), time: time)
        let authorization =
            "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope(time)), "
            + "SignedHeaders=\(request.signedHeaders), Signature=\(signature)"
        return added + [("Authorization", authorization)]
    }

    /// Query presigning: returns the full query (the caller's pairs plus the `X-Amz-*` ones,
    /// signature last) for a URL valid `expires` seconds from `time`. The payload is unsigned.
    public func presignedQuery(
        method: String, encodedPath: String, query: [(String, String)],
        headers: [(String, String)], expires: Int,
        time: SigningTime
    ) -> [(String, String)] {
        let (items, signature) = presign(
            method: method, encodedPath: encodedPath, query: query, headers: headers,
            expires: expires, time: time)
        return items + [("X-Amz-Signature", signature)]
    }

    /// The same, as the encoded query string of the URL: the canonical query (sorted, as AWS's
    /// SDKs send it) followed by `X-Amz-Signature`.
    public func presignedQueryString(
        method: String, encodedPath: String, query: [(String, String)],
        headers: [(String, String)], expires: Int, time: SigningTime
    ) -> String {
        var out: [UInt8] = []
        appendPresignedQuery(
            to: &out, method: method, encodedPath: encodedPath, query: query, headers: headers,
            expires: expires, time: time)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the presigned query string to `out` (a URL being built), with no string made
    /// for the common request, since this runs for every presigned URL the gateway hands out.
    public func appendPresignedQuery(
        to out: inout [UInt8], method: String, encodedPath: String,
        query: [(String, String)], headers: [(String, String)], expires: Int,
        time: SigningTime
    ) {
        appendPresignedQuery(
            to: &out, method: method, path: .text(encodedPath), query: query, headers: headers,
            expires: expires, time: time)
    }

    /// The same, for a URL whose encoded path is already in `out`, at `encodedPathIn`: the
    /// path is then written once, not built apart and copied. `host`, when given, is signed
    /// as a `Host` header before `headers`, without the caller making a list for it.
    public func appendPresignedQuery(
        to out: inout [UInt8], method: String, encodedPathIn: Range<Int>,
        query: [(String, String)], host: String? = nil, headers: [(String, String)], expires: Int,
        time: SigningTime
    ) {
        appendPresignedQuery(
            to: &out, method: method, path: .inBuffer(encodedPathIn), query: query, host: host, headers: headers,
            expires: expires, time: time)
    }

    /// Where the encoded path of the request being signed is.
    enum PathText {
        case text(String)
        case inBuffer(Range<Int>)

        func string(_ out: [UInt8]) -> String {
            switch self {
            case .text(let text): return text
            case .inBuffer(let range): return String(decoding: out[range], as: UTF8.self)
            }
        }
    }

    private func appendPresignedQuery(
        to out: inout [UInt8], method: String, path: PathText,
        query: [(String, String)], host: String? = nil, headers: [(String, String)], expires: Int,
        time: SigningTime
    ) {
        // The common case in one pass; anything else (a query of the caller's, a header name
        // twice or beyond ASCII, a value to trim) in stages.
        if query.isEmpty,
            appendPlainPresignedQuery(to: &out, method: method, path: path, host: host, headers: headers, expires: expires, time: time)
        {
            return
        }
        let headers = host.map { [("Host", $0)] + headers } ?? headers
        let queryStart = out.count
        let request = presignRequest(
            method: method, encodedPath: path.string(out), query: query, headers: headers,
            expires: expires, time: time)
        let canonicalHeaders = request.canonicalHeaders
        // Each side encoded, sorted by encoded name then value.
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
        for (index, pair) in pairs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            out.append(contentsOf: pair.name)
            out.append(UInt8(ascii: "="))
            out.append(contentsOf: pair.value)
        }
        appendSignature(
            to: &out, queryStart: queryStart, method: method, path: path,
            canonicalHeaders: canonicalHeaders, time: time)
    }

    /// Stages 1 (the rest of the canonical request, around the canonical query already in
    /// `out` from `queryStart`) to 4; appends `&X-Amz-Signature=…` to `out`.
    private func appendSignature(
        to out: inout [UInt8], queryStart: Int, method: String, path: PathText,
        canonicalHeaders: [(String, String)], time: SigningTime
    ) {
        // One scratch buffer: the canonical request, then (once hashed) the string to sign.
        var scratch: [UInt8] = []
        scratch.reserveCapacity(out.count - queryStart + 320)
        scratch.append(contentsOf: method.utf8)
        scratch.append(0x0A)
        switch path {
        case .text(let text): scratch.append(contentsOf: (text.isEmpty ? "/" : text).utf8)
        case .inBuffer(let range) where range.isEmpty: scratch.append(UInt8(ascii: "/"))
        case .inBuffer(let range): scratch.append(contentsOf: out[range])
        }
        scratch.append(0x0A)
        scratch.append(contentsOf: out[queryStart...])
        scratch.append(0x0A)
        for (name, value) in canonicalHeaders {
            scratch.append(contentsOf: name.utf8)
            scratch.append(UInt8(ascii: ":"))
            scratch.append(contentsOf: value.utf8)
            scratch.append(0x0A)
        }
        scratch.append(0x0A)
        for (index, header) in canonicalHeaders.enumerated() {
            if index > 0 { scratch.append(UInt8(ascii: ";")) }
            scratch.append(contentsOf: header.0.utf8)
        }
        scratch.append(0x0A)
        scratch.append(contentsOf: Self.unsignedPayload.utf8)
        // The string to sign goes after the canonical request in the same buffer.
        let canonicalEnd = scratch.count
        scratch.append(contentsOf: "AWS4-HMAC-SHA256\n".utf8)
        time.appendDateTime(to: &scratch)
        scratch.append(0x0A)
        appendScope(time, to: &scratch)
        scratch.append(0x0A)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digest in
            scratch.withUnsafeBytes { Digest.sha256(UnsafeRawBufferPointer(rebasing: $0[..<canonicalEnd]), into: digest) }
            Digest.appendHex(UnsafeBufferPointer(digest), to: &scratch)
        }
        out.append(contentsOf: "&X-Amz-Signature=".utf8)
        let key = preparedKey(time)
        scratch[canonicalEnd...].withBytes { key.appendHex(of: $0, to: &out) }
    }

    private func presign(
        method: String, encodedPath: String, query: [(String, String)], headers: [(String, String)],
        expires: Int, time: SigningTime
    ) -> ([(String, String)], String) {
        let request = presignRequest(
            method: method, encodedPath: encodedPath, query: query, headers: headers,
            expires: expires, time: time)
        return (request.query, signature(stringToSign(request, time: time), time: time))
    }

    private func presignRequest(
        method: String, encodedPath: String, query: [(String, String)],
        headers: [(String, String)], expires: Int, time: SigningTime
    ) -> CanonicalRequest {
        var items = query
        items.append(("X-Amz-Algorithm", Self.algorithm))
        items.append(("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(time))"))
        items.append(("X-Amz-Date", time.dateTime))
        items.append(("X-Amz-Expires", String(max(0, expires))))
        if let token = credentials.sessionToken { items.append(("X-Amz-Security-Token", token)) }
        items.append(("X-Amz-SignedHeaders", CanonicalRequest.canonicalHeaders(headers).map(\.0).joined(separator: ";")))
        return CanonicalRequest(
            method: method, encodedPath: encodedPath, query: items,
            headers: headers, payloadHash: Self.unsignedPayload)
    }
}
