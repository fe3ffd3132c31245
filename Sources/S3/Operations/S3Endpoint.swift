import SigV4

/// Where the bucket lives and how its URLs are spelled: path-style
/// (`http://host:port/bucket/key`), virtual-hosted (`https://bucket.host/key`) or transfer
/// acceleration (`https://bucket.s3-accelerate.amazonaws.com/key`).
public struct S3Endpoint: Sendable, Equatable {
    public enum Style: Sendable, Equatable { case path, virtualHosted, accelerate }

    public var scheme: String
    /// Host name or address, without brackets for IPv6.
    public var host: String
    public var port: Int?
    public var bucket: String
    public var region: String
    public var style: Style

    public init(scheme: String, host: String, port: Int?, bucket: String, region: String, style: Style) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.bucket = bucket
        self.region = region
        self.style = style
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// From a URL like `http://127.0.0.1:8333`; nil `url` means AWS's regional endpoint.
    public static func parse(
        url: String?, bucket: String, region: String, pathStyle: Bool?,
        accelerate: Bool
    ) throws -> S3Endpoint {
        try checkBucket(bucket)
        // The region is spelled into AWS host names and signed scopes.
        guard !region.isEmpty, region.utf8.allSatisfy(URIEncoding.isUnreserved) else {
            throw ParseError(description: "has a region that is not made of letters, digits, -, ., _ or ~")
        }
        if accelerate {
            return S3Endpoint(
                scheme: "https", host: "s3-accelerate.amazonaws.com", port: nil,
                bucket: bucket, region: region, style: .accelerate)
        }
        guard let url, !url.isEmpty else {
            return S3Endpoint(
                scheme: "https", host: "s3.\(region).amazonaws.com", port: nil, bucket: bucket,
                region: region, style: pathStyle == true ? .path : .virtualHosted)
        }
        guard let schemeEnd = url.firstIndex(of: ":"), url[schemeEnd...].hasPrefix("://") else {
            throw ParseError(description: "must be an http:// or https:// URL")
        }
        let scheme = url[..<schemeEnd].lowercased()
        guard scheme == "http" || scheme == "https" else { throw ParseError(description: "must be an http:// or https:// URL") }
        var rest = url[url.index(schemeEnd, offsetBy: 3)...]
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...].allSatisfy({ $0 == "/" }) else {
                throw ParseError(description: "must not have a path")
            }
            rest = rest[..<slash]
        }
        var host = Substring(rest)
        var port: Int?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw ParseError(description: "has a broken IPv6 literal") }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if after.hasPrefix(":") { port = Int(after.dropFirst()); if port == nil { throw ParseError(description: "has a bad port") } }
        } else if let colon = host.lastIndex(of: ":") {
            guard let p = Int(host[host.index(after: colon)...]), (1...65535).contains(p) else {
                throw ParseError(description: "has a bad port")
            }
            port = p
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw ParseError(description: "has no host") }
        // RFC 3986 reg-name, IPv4 and IPv6 literal characters only: URLs handed out are then
        // safe to write into JSON and headers as they are.
        guard host.utf8.allSatisfy({ URIEncoding.isUnreserved($0) || Self.hostPunctuation.utf8.contains($0) }) else {
            throw ParseError(description: "has a character a host name cannot have")
        }
        return S3Endpoint(
            scheme: scheme, host: String(host), port: port, bucket: bucket, region: region,
            style: pathStyle == false ? .virtualHosted : .path)
    }

    private static let hostPunctuation = "%!$&'()*+,;=:"

    /// S3's bucket-name characters (any case, and `_`, which some S3-compatible stores allow):
    /// the name goes into paths and host names unencoded.
    public static func checkBucket(_ bucket: String) throws(ParseError) {
        guard bucket.utf8.allSatisfy({ URIEncoding.isUnreserved($0) && $0 != UInt8(ascii: "~") }) else {
            throw ParseError(description: "has a character S3 does not allow in a bucket name")
        }
    }

    /// The `Host` header value.
    public var hostHeader: String { computeHostHeader() }

    private func computeHostHeader() -> String {
        let name: String
        switch style {
        case .path: name = host.contains(":") ? "[\(host)]" : host
        case .virtualHosted, .accelerate: name = "\(bucket).\(host)"
        }
        if let port, !(scheme == "http" && port == 80) && !(scheme == "https" && port == 443) {
            return "\(name):\(port)"
        }
        return name
    }

    /// The encoded request path for `key` (nil: the bucket itself).
    public func encodedPath(key: String?) -> String {
        var path: [UInt8] = []
        path.reserveCapacity(bucket.utf8.count + (key?.utf8.count ?? 0) * 3 + 2)
        appendEncodedPath(key: key, to: &path)
        return String(decoding: path, as: UTF8.self)
    }

    /// The same, appended to `out`: S3 signs and serves the key encoded once, `/` kept (no
    /// double encoding).
    public func appendEncodedPath(key: String?, to out: inout [UInt8]) {
        if style == .path {
            out.append(UInt8(ascii: "/"))
            out.append(contentsOf: bucket.utf8)
        }
        if let key {
            out.append(UInt8(ascii: "/"))
            URIEncoding.append(key, encodeSlash: false, to: &out)
        } else if style != .path {
            out.append(UInt8(ascii: "/"))
        }
    }

    /// `scheme://host` plus `path`.
    public func url(encodedPath: String) -> String {
        "\(scheme)://\(hostHeader)\(encodedPath)"
    }
}
