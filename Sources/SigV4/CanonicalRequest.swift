/// Stage 1 of SigV4: the canonical request (AWS "Create a canonical request").
///
///     HTTPMethod \n CanonicalURI \n CanonicalQueryString \n CanonicalHeaders \n SignedHeaders \n HashedPayload
public struct CanonicalRequest: Sendable {
    public let method: String
    /// The path exactly as it goes on the wire, already URI-encoded (S3: each key byte once).
    public let encodedPath: String
    public let query: [(String, String)]
    public let headers: [(String, String)]
    public let payloadHash: String

    public init(method: String, encodedPath: String, query: [(String, String)],
                headers: [(String, String)], payloadHash: String) {
        self.method = method
        self.encodedPath = encodedPath
        self.query = query
        self.headers = headers
        self.payloadHash = payloadHash
    }

    /// Query pairs encoded, then sorted by name and value (byte order of the encoded text).
    public var canonicalQuery: String {
        query.map { (URIEncoding.encode($0.0), URIEncoding.encode($0.1)) }
            .sorted { $0.0 == $1.0 ? $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) : $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Lower-case names, sorted; repeated names joined with commas in order; values trimmed
    /// with inner runs of spaces folded to one.
    public var canonicalHeaders: [(String, String)] {
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            merged[name.lowercased(), default: []].append(Self.trimAll(value))
        }
        return merged.map { ($0.key, $0.value.joined(separator: ",")) }
            .sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
    }

    public var signedHeaders: String {
        canonicalHeaders.map(\.0).joined(separator: ";")
    }

    public var text: String {
        let headerLines = canonicalHeaders.map { "\($0.0):\($0.1)\n" }.joined()
        return [method, encodedPath.isEmpty ? "/" : encodedPath, canonicalQuery, headerLines, signedHeaders, payloadHash]
            .joined(separator: "\n")
    }

    static func trimAll(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            .trimmingCharacters(in: [" ", "\t"])
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
