import Gateway

/// A presigner for route tests: URLs that name what they sign (`https://s3.test/KEY?method=…`),
/// so a test reads what the route asked for; no signature.
public struct StaticPresigner: Presigner {
    public var credentialsExpiration: Int?

    public init(credentialsExpiration: Int? = nil) {
        self.credentialsExpiration = credentialsExpiration
    }

    public func appendURL(to out: inout [UInt8], method: String, key: String, expires: Int, headers: [(String, String)],
                          query: [(String, String)], at: Int) {
        var url = "https://s3.test/\(key)?method=\(method)&expires=\(expires)"
        for (name, value) in query { url += "&\(name)=\(value)" }
        for (name, value) in headers { url += "&h-\(name.lowercased())=\(value)" }
        out.append(contentsOf: url.utf8.filter { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
    }

    public func postForm(key: String, fields: [(String, String)], maxSize: Int64, expires: Int, at: Int) -> (url: String, fields: [(String, String)]) {
        ("https://s3.test/", [("key", key), ("max", String(maxSize))])
    }
}
