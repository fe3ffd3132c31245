import HTTPServer

/// Cross-origin rules for browsers (`GATEWAY_CORS_ORIGINS`): which origins may call, the
/// preflight answer, and the headers a page may read from responses.
public struct CORS: Sendable {
    let origins: Set<String>
    let anyOrigin: Bool

    static let allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
    static let allowedHeaders = "Authorization, Content-Type, Content-MD5, If-None-Match, If-Match, Range, "
        + "Upload-Offset, Upload-Length, Upload-Metadata, Upload-Checksum, Upload-Defer-Length, Upload-Concat, "
        + "Tus-Resumable, X-HTTP-Method-Override, X-Requested-With, X-Request-Id"
    static let exposedHeaders = "ETag, Location, Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires, "
        + "Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, Content-Range, "
        + "Content-Length, Content-Disposition, Accept-Ranges, Retry-After, WWW-Authenticate, Idempotent-Replayed, X-Request-Id"

    public init(origins: [String]) {
        anyOrigin = origins.contains("*")
        self.origins = Set(origins.filter { $0 != "*" })
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

    /// 200 (not 204: some browsers refuse a 204 preflight) with the methods and headers allowed.
    func preflight(origin: String) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Access-Control-Allow-Origin", origin)
        headers.add("Access-Control-Allow-Methods", Self.allowedMethods)
        headers.add("Access-Control-Allow-Headers", Self.allowedHeaders)
        headers.add("Access-Control-Max-Age", "600")
        headers.add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
        return HTTPResponse(status: 200, headers: headers)
    }

    /// Adds the response headers for an allowed origin.
    func decorate(_ response: inout HTTPResponse, origin: String) {
        response.headers.add("Access-Control-Allow-Origin", origin)
        response.headers.add("Access-Control-Expose-Headers", Self.exposedHeaders)
        response.headers.add("Vary", "Origin")
    }
}
