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

    public init(
        method: String, encodedPath: String, query: [(String, String)],
        headers: [(String, String)], payloadHash: String
    ) {
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
    public var canonicalHeaders: [(String, String)] { Self.canonicalHeaders(headers) }

    /// The same for any header list (what a presigned query names before any request exists).
    public static func canonicalHeaders(_ headers: [(String, String)]) -> [(String, String)] {
        var merged: [(String, String)] = []
        merged.reserveCapacity(headers.count)
        for (name, value) in headers {
            let lower = lowercased(name)
            let clean = trimAll(value)
            if let index = merged.firstIndex(where: { $0.0 == lower }) {
                merged[index].1 += "," + clean
            } else {
                merged.append((lower, clean))
            }
        }
        merged.sort { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
        return merged
    }

    public var signedHeaders: String {
        canonicalHeaders.map(\.0).joined(separator: ";")
    }

    public var text: String { text(canonicalQuery: canonicalQuery) }

    func text(canonicalQuery: String) -> String {
        let headers = canonicalHeaders
        var out = method
        out.reserveCapacity(512)
        out += "\n"
        out += encodedPath.isEmpty ? "/" : encodedPath
        out += "\n"
        out += canonicalQuery
        out += "\n"
        for (name, value) in headers {
            out += name
            out += ":"
            out += value
            out += "\n"
        }
        out += "\n"
        out += headers.map(\.0).joined(separator: ";")
        out += "\n"
        out += payloadHash
        return out
    }

    /// ASCII names lower-cased byte by byte (unchanged when already lower case); others by
    /// Unicode's rules.
    static func lowercased(_ name: String) -> String {
        var copy = name
        let lowered = copy.withUTF8 { utf8 -> String? in
            guard utf8.allSatisfy({ $0 < 0x80 }) else { return name.lowercased() }
            guard utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return nil }
            return String(unsafeUninitializedCapacity: utf8.count) { out in
                for (i, byte) in utf8.enumerated() { out[i] = ByteWriter.lower(byte) }
                return utf8.count
            }
        }
        return lowered ?? name
    }

    /// Trims spaces and tabs and folds inner runs of spaces to one (AWS's `Trimall`).
    static func trimAll(_ value: String) -> String {
        guard needsTrim(value) else { return value }
        return value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// Whether AWS's `Trimall` would change `value` (white space at an end, a tab, two spaces).
    static func needsTrim(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            guard let first = bytes.first, let last = bytes.last else { return false }
            if first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 { return true }
            var previousSpace = false
            for byte in bytes {
                if byte == 0x09 || (byte == 0x20 && previousSpace) { return true }
                previousSpace = byte == 0x20
            }
            return false
        }
    }
}
