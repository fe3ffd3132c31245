import Gateway

/// A presigner for route tests: URLs that name what they sign (`https://s3.test/KEY?method=…`),
/// so a test reads what the route asked for; no signature.
public struct StaticPresigner: Presigner {
    public var credentialsExpiration: Int?

    public init(credentialsExpiration: Int? = nil) {
        self.credentialsExpiration = credentialsExpiration
    }

    public func appendURL(
        to out: inout [UInt8], method: String, key: String, expires: Int, headers: [(String, String)],
        query: [(String, String)], at: Int
    ) {
        var url = "https://s3.test/\(key)?method=\(method)&expires=\(expires)"
        for (name, value) in query { url += "&\(name)=\(value)" }
        for (name, value) in headers { url += "&h-\(name.lowercased())=\(value)" }
        // Printable ASCII, as a real URL is: other bytes percent-encoded.
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in url.utf8 where byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
            if byte > 0x20 && byte < 0x7F {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
    }

    public func postForm(
        key: String, fields: [(String, String)], maxSize: Int64, expires: Int, at: Int
    ) -> (url: String, fields: [(String, String)]) {
        ("https://s3.test/", [("key", key), ("max", String(maxSize))])
    }
}
