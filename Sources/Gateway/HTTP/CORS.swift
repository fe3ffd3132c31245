import HTTPServer

/// Cross-origin rules for browsers (`GATEWAY_CORS_ORIGINS`): which origins may call, the
/// preflight answer, and the headers a page may read from responses.
public struct CORS: Sendable {
    let origins: Set<String>
    let anyOrigin: Bool
    /// `Access-Control-Allow-Credentials: true` for allowed origins (`GATEWAY_CORS_ALLOW_CREDENTIALS`).
    let allowCredentials: Bool

    static let allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
    static let allowedHeaders =
        "Authorization, Content-Type, Content-MD5, If-None-Match, If-Match, Range, "
        + "Upload-Offset, Upload-Length, Upload-Metadata, Upload-Checksum, Upload-Defer-Length, Upload-Concat, "
        + "Tus-Resumable, X-HTTP-Method-Override, X-Requested-With, X-Request-Id"
    static let exposedHeaders =
        "ETag, Location, Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires, "
        + "Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, Content-Range, "
        + "Content-Length, Content-Disposition, Accept-Ranges, Retry-After, WWW-Authenticate, Idempotent-Replayed, X-Request-Id"

    public init(origins: [String], allowCredentials: Bool = false) {
        anyOrigin = origins.contains("*")
        self.origins = Set(origins.filter { $0 != "*" })
        self.allowCredentials = allowCredentials
    }

    var enabled: Bool { anyOrigin || !origins.isEmpty }

    func allows(_ origin: String) -> Bool {
        anyOrigin || origins.contains(origin.lowercased())
    }

    /// A preflight: OPTIONS with `Origin` and `Access-Control-Request-Method`.
    static func isPreflight(_ request: HTTPRequest) -> Bool {
        request.method == "OPTIONS" && request.headers["origin"] != nil
            && request.headers["access-control-request-method"] != nil
    }

    /// 200 (not 204: some browsers refuse a 204 preflight) with the methods allowed and every
    /// header the browser asks for (tracing headers such as `traceparent`, `sentry-trace` and
    /// `baggage` included): which headers a request carries is no reason to refuse it, the
    /// routes check what they read.
    func preflight(origin: String, requestedHeaders: String? = nil) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Access-Control-Allow-Origin", origin)
        if allowCredentials { headers.add("Access-Control-Allow-Credentials", "true") }
        headers.add("Access-Control-Allow-Methods", Self.allowedMethods)
        headers.add("Access-Control-Allow-Headers", requestedHeaders.flatMap(Self.headerList) ?? Self.allowedHeaders)
        headers.add("Access-Control-Max-Age", "600")
        headers.add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
        return HTTPResponse(status: 200, headers: headers)
    }

    /// Adds the response headers for an allowed origin.
    func decorate(_ response: inout HTTPResponse, origin: String) {
        for (name, value) in headers(origin: origin) { response.headers.add(name, value) }
    }

    /// The headers of an answer to an allowed origin (refusals of the HTTP layer included).
    func headers(origin: String) -> [(String, String)] {
        var out = [("Access-Control-Allow-Origin", origin)]
        if allowCredentials { out.append(("Access-Control-Allow-Credentials", "true")) }
        out.append(("Access-Control-Expose-Headers", Self.exposedHeaders))
        out.append(("Vary", "Origin"))
        return out
    }

    /// `Access-Control-Request-Headers` as a list to allow: header names only (tokens), at most
    /// 64 of them; nil for anything else (the fixed list is answered then).
    static func headerList(_ requested: String) -> String? {
        let names = requested.split(separator: ",").map { $0.trimmingOWS() }.filter { !$0.isEmpty }
        guard !names.isEmpty, names.count <= 64,
            names.allSatisfy({ name in
                name.utf8.count <= 64
                    && name.utf8.allSatisfy { byte in
                        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                            || "!#$%&'*+-.^_`|~".utf8.contains(byte)
                    }
            })
        else { return nil }
        return names.joined(separator: ", ")
    }
}
