import Auth
import Foundation
import HTTPServer
import S3
import SigV4

/// `POST /v1/presign` and `POST /v1/presign/post`: URLs a frontend uses to talk to S3 directly,
/// only for keys its identity may touch (PRODUCT.md §3, §4 "Presigned URLs").
struct PresignRoutes: Sendable {
    let authenticator: Authenticator
    let policy: AccessPolicy
    let client: S3Client
    /// Where clients reach S3 (`GATEWAY_S3_PUBLIC_ENDPOINT`), when not the gateway's own endpoint.
    let publicEndpoint: S3Endpoint?
    let defaultExpiry: Int
    let maxExpiry: Int
    let maxObjectSize: Int64
    let credentialExpiration: Int?
    let now: @Sendable () -> Int

    struct PresignRequest {
        let operation: String
        let accessLevel: AccessLevel
        let key: String
        let targetIdentityId: String?
        let contentType: String?
        let contentLength: Int64?
        let contentMD5: String?
        let metadata: [String: String]?
        let expiresIn: Int?

        init(_ fields: JSONFields) throws(APIError) {
            operation = try fields.requiredString("operation")
            guard let level = AccessLevel(rawValue: try fields.requiredString("accessLevel")) else {
                throw APIError.invalidJSON("Field 'accessLevel' must be public, protected or private.")
            }
            accessLevel = level
            key = try fields.requiredString("key")
            targetIdentityId = try fields.string("targetIdentityId")
            contentType = try fields.string("contentType")
            contentLength = try fields.integer("contentLength")
            contentMD5 = try fields.string("contentMD5")
            metadata = try fields.stringMap("metadata")
            expiresIn = try fields.integer("expiresIn").map { Int(clamping: $0) }
        }
    }

    struct PostRequest: Decodable {
        let accessLevel: AccessLevel
        let key: String
        let contentType: String?
        let maxSize: Int64?
        let expiresIn: Int?
    }

    struct PostResponse: Encodable {
        let url: String
        let fields: [String: String]
        let expiresAt: String
        let objectKey: String
    }

    func register(in router: inout Router<RouteHandler>) {
        router.add("POST", "/v1/presign") { request in try await presign(request.http) }
        router.add("POST", "/v1/presign/post") { request in try await presignPost(request.http) }
    }

    private func presign(_ http: HTTPRequest) async throws -> HTTPResponse {
        let body = try PresignRequest(try await Responses.fields(from: http))
        let method: String
        let mode: AccessMode
        switch body.operation {
        case "get": (method, mode) = ("GET", .read)
        case "head": (method, mode) = ("HEAD", .read)
        case "put": (method, mode) = ("PUT", .write)
        case "delete": (method, mode) = ("DELETE", .write)
        default: throw APIError.validation("operation must be get, put, head or delete.")
        }
        let identity = try authenticator.identity(of: http, guestAllowed: mode == .read)
        let objectKey = try grantedKey(mode: mode, level: body.accessLevel, key: body.key, identity: identity,
                                       target: body.targetIdentityId)
        let expires = try lifetime(body.expiresIn)
        var signed: [(String, String)] = []
        if method == "PUT" {
            if let contentType = body.contentType {
                try Self.checkHeaderValue(contentType, field: "contentType")
                signed.append(("Content-Type", contentType))
            }
            if let md5 = body.contentMD5 {
                guard let raw = Data(base64Encoded: md5), raw.count == 16 else {
                    throw APIError.validation("contentMD5 must be the base64 of a 16-byte MD5 digest.")
                }
                signed.append(("Content-MD5", md5))
            }
            if let length = body.contentLength {
                guard (0...min(maxObjectSize, 5 << 30)).contains(length) else {
                    throw APIError.validation("contentLength must be from 0 to \(min(maxObjectSize, 5 << 30)) (a single PUT's limit).")
                }
                signed.append(("Content-Length", String(length)))
            }
            signed += try Self.metadataHeaders(body.metadata)
        } else if body.contentType != nil || body.contentMD5 != nil || body.contentLength != nil || body.metadata != nil {
            throw APIError.validation("contentType, contentLength, contentMD5 and metadata apply to put only.")
        }
        let issued = now()
        let url = client.presignedURL(method: method, key: objectKey, expires: expires, headers: signed, at: issued,
                                      endpointOverride: publicEndpoint)
        // Written by hand: this is the hottest answer a frontend asks for.
        var json = JSONText()
        json.begin()
        json.field("url", .string(url))
        json.field("method", .string(method))
        json.rawField("headers", JSONText.object(signed.map { ($0.0, LogValue.string($0.1)) }))
        json.field("expiresAt", .string(SigningTime(secondsSince1970: issued + expires).iso8601))
        json.field("objectKey", .string(objectKey))
        json.end()
        return Responses.json(200, bytes: json.bytes)
    }

    private func presignPost(_ http: HTTPRequest) async throws -> HTTPResponse {
        let body = try await Responses.decode(PostRequest.self, from: http)
        let identity = try authenticator.identity(of: http)
        let objectKey = try grantedKey(mode: .write, level: body.accessLevel, key: body.key, identity: identity, target: nil)
        let expires = try lifetime(body.expiresIn)
        let ceiling = min(maxObjectSize, 5 << 30)  // S3 takes at most 5 GiB in one POST
        let maxSize = body.maxSize ?? ceiling
        guard (1...ceiling).contains(maxSize) else { throw APIError.validation("maxSize must be from 1 to \(ceiling).") }
        if let contentType = body.contentType { try Self.checkHeaderValue(contentType, field: "contentType") }
        let issued = now()
        let endpoint = publicEndpoint ?? client.endpoint
        let policy = PostPolicy(signer: Signer(credentials: client.signingCredentials, region: endpoint.region),
                                bucket: endpoint.bucket, key: objectKey, contentType: body.contentType, maxSize: maxSize,
                                expires: expires, time: SigningTime(secondsSince1970: issued))
        let url = endpoint.url(encodedPath: endpoint.style == .path ? "/\(endpoint.bucket)" : "/")
        return Responses.json(200, PostResponse(url: url, fields: Dictionary(policy.fields, uniquingKeysWith: { a, _ in a }),
                                                expiresAt: Self.iso8601(issued + expires), objectKey: objectKey))
    }

    private func grantedKey(mode: AccessMode, level: AccessLevel, key: String, identity: Identity,
                            target: String?) throws(APIError) -> String {
        do {
            return try policy.objectKey(for: mode, level: level, key: key, identity: identity, targetIdentityID: target)
        } catch {
            throw APIError.access(error)
        }
    }

    /// The URL's lifetime: the default, or what the client asks up to the maximum, and never
    /// past the moment temporary credentials stop working.
    private func lifetime(_ asked: Int?) throws(APIError) -> Int {
        let expires = asked ?? defaultExpiry
        guard (1...maxExpiry).contains(expires) else {
            throw APIError.validation("expiresIn must be from 1 to \(maxExpiry) seconds.")
        }
        if let credentialExpiration {
            let left = credentialExpiration - now()
            guard left > 0 else { throw APIError.unavailable("The gateway's S3 credentials have expired.") }
            return min(expires, left)
        }
        return expires
    }

    static func checkHeaderValue(_ value: String, field: String) throws(APIError) {
        // Printable ASCII only: S3 servers fold other white space before checking signatures, and
        // browsers send bytes 0x80–0xFF as Latin-1, not the UTF-8 that was signed.
        if value.isEmpty || value.utf8.count > 1024 || !value.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) {
            throw APIError.validation("\(field) must be 1–1024 printable ASCII characters.")
        }
    }

    /// `x-amz-meta-*` headers; names are lower-case tokens, 2 KiB in all (S3's limit).
    static func metadataHeaders(_ metadata: [String: String]?) throws(APIError) -> [(String, String)] {
        guard let metadata else { return [] }
        var total = 0
        var out: [(String, String)] = []
        var seen = Set<String>()
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty, name.utf8.allSatisfy({ byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }) else { throw APIError.validation("metadata names must be ASCII letters, digits, - and _.") }
            let lower = name.lowercased()
            guard seen.insert(lower).inserted else { throw APIError.validation("metadata names must differ in more than case.") }
            try checkHeaderValue(value, field: "metadata.\(lower)")
            total += lower.utf8.count + value.utf8.count
            out.append(("x-amz-meta-\(lower)", value))
        }
        guard total <= 2048 else { throw APIError.validation("metadata may hold at most 2 KiB.") }
        return out
    }

    /// `2026-11-29T12:30:45Z` (RFC 3339), without a date formatter per request.
    static func iso8601(_ seconds: Int) -> String {
        SigningTime(secondsSince1970: seconds).iso8601
    }
}
