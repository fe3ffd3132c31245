import Auth
import Foundation
import HTTPServer
import TransferEngine

/// `POST /v1/presign` and `POST /v1/presign/post`: URLs a frontend uses to talk to S3 directly,
/// only for keys its identity may touch (the access levels of `AccessPolicy`).
struct PresignRoutes: Sendable {
    let context: RouteContext

    struct PresignRequest {
        static let known = FieldNames(
            AttributeFields.names.union([
                "operation", "accessLevel", "key", "targetIdentityId", "contentLength",
                "contentMD5", "expiresIn", "responseContentDisposition", "responseContentType", "preventOverwrite", "ifMatch",
            ]))
        /// The fields only a put uses, in the order a refusal names the first one given.
        static let putOnlyNames = AttributeFields.names.union(["contentLength", "contentMD5", "preventOverwrite"]).sorted()
        let operation: String
        let accessLevel: AccessLevel
        let key: String
        let targetIdentityId: String?
        let attributes: ObjectAttributesSpec
        let contentLength: Int64?
        let contentMD5: String?
        let expiresIn: Int?
        /// The answer's headers S3 is asked to set (a get only): signed into the URL.
        let responseContentDisposition: String?
        let responseContentType: String?
        /// A put that must not replace an object (`If-None-Match: *`, signed in).
        let preventOverwrite: Bool
        /// A put or delete only of the object with this ETag (`If-Match`, signed in).
        let ifMatch: String?
        /// The first field that only a put uses, if one was given (not looked for in a put).
        let putOnly: String?

        init(_ fields: JSONFields) throws(APIError) {
            operation = try fields.requiredString("operation")
            accessLevel = try fields.accessLevel("accessLevel")
            key = try fields.requiredString("key")
            targetIdentityId = try fields.string("targetIdentityId")
            attributes = try AttributeFields.read(fields)
            contentLength = try fields.integer("contentLength")
            contentMD5 = try fields.string("contentMD5")
            expiresIn = try fields.integer("expiresIn").map { Int(clamping: $0) }
            responseContentDisposition = try Self.headerValue(fields, "responseContentDisposition")
            responseContentType = try Self.headerValue(fields, "responseContentType")
            preventOverwrite = try fields.bool("preventOverwrite") ?? false
            ifMatch = try fields.string("ifMatch").map { value throws(APIError) in try SafeWrite.etag(value) }
            putOnly = operation == "put" ? nil : Self.putOnlyNames.first(where: fields.has)
        }

        /// A header value for S3 to send back: at most 1024 bytes of visible ASCII and spaces
        /// (what every S3 store takes in a header; a filename beyond ASCII goes as RFC 8187
        /// `filename*=UTF-8''…`).
        static func headerValue(_ fields: JSONFields, _ name: String) throws(APIError) -> String? {
            guard let value = try fields.string(name) else { return nil }
            guard !value.isEmpty, value.utf8.count <= 1024, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                throw APIError.validation("\(name) must be 1 to 1024 characters of printable ASCII.")
            }
            return value
        }
    }

    struct PostRequest {
        static let known = FieldNames(AttributeFields.names.union(["accessLevel", "key", "maxSize", "expiresIn"]))
        let accessLevel: AccessLevel
        let key: String
        let attributes: ObjectAttributesSpec
        let maxSize: Int64?
        let expiresIn: Int?

        init(_ fields: JSONFields) throws(APIError) {
            accessLevel = try fields.accessLevel("accessLevel")
            key = try fields.requiredString("key")
            attributes = try AttributeFields.read(fields)
            maxSize = try fields.integer("maxSize")
            expiresIn = try fields.integer("expiresIn").map { Int(clamping: $0) }
        }
    }

    func register(in router: inout Router<GatewayRoute>) {
        router.add(
            "POST", "/v1/presign", { request in try await presign(request.http) },
            atOnce: { request in try presignAtOnce(request.http) })
        router.add("POST", "/v1/presign/post") { request in try await presignPost(request.http) }
    }

    private func presign(_ http: HTTPRequest) async throws -> HTTPResponse {
        // The token before the body: without one the caller is answered 401 at once, unless
        // guests may read (what the body asks for decides then). The body is the only wait; the
        // rest runs in a plain call, so its locals stay out of the task's async frame.
        let identity = try context.authenticator.identity(of: http, guestAllowed: true)
        return try presign(PresignRequest(try await Responses.fields(from: http, known: PresignRequest.known)), identity)
    }

    /// The same, for a body that came with its head: no task, no wait.
    private func presignAtOnce(_ http: HTTPRequest) throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http, guestAllowed: true)
        return try presign(PresignRequest(try Responses.fieldsAtOnce(from: http, known: PresignRequest.known)), identity)
    }

    private func presign(_ body: PresignRequest, _ identity: Identity) throws -> HTTPResponse {
        let method: String
        let mode: AccessMode
        switch body.operation {
        case "get": (method, mode) = ("GET", .read)
        case "head": (method, mode) = ("HEAD", .read)
        case "put": (method, mode) = ("PUT", .write)
        case "delete": (method, mode) = ("DELETE", .write)
        default: throw APIError.validation("operation must be get, put, head or delete.")
        }
        let objectKey = try context.policy.granted(
            mode, level: body.accessLevel, key: body.key, identity: identity,
            target: body.targetIdentityId)
        // One reading of the clock for the lifetime and the signature: read twice, a second's
        // tick between them would let the URL outlive temporary credentials by that second.
        let issued = context.now()
        let expires = try lifetime(body.expiresIn, now: issued)
        var signed: [(String, String)] = []
        if method == "PUT" {
            signed.reserveCapacity(6 + body.attributes.metadata.count)
            AttributeFields.appendHeaders(body.attributes, to: &signed)
            if let md5 = body.contentMD5 {
                guard let raw = Data(base64Encoded: md5), raw.count == 16 else {
                    throw APIError.validation("contentMD5 must be the base64 of a 16-byte MD5 digest.")
                }
                signed.append(("Content-MD5", md5))
            }
            if let length = body.contentLength {
                guard (0...min(context.engine.maxObjectSize, 5 << 30)).contains(length) else {
                    throw APIError.validation(
                        "contentLength must be from 0 to \(min(context.engine.maxObjectSize, 5 << 30)) (a single PUT's limit).")
                }
                signed.append(("Content-Length", String(length)))
            }
            if body.preventOverwrite { signed.append(("If-None-Match", "*")) }
        } else if let field = body.putOnly {
            throw APIError(.optionNotSupported, "'\(field)' applies to put only.")
        }
        if let etag = body.ifMatch {
            guard method == "PUT" || method == "DELETE" else {
                throw APIError(.optionNotSupported, "'ifMatch' applies to put and delete only.")
            }
            guard !body.preventOverwrite else {
                throw APIError.validation("preventOverwrite and ifMatch exclude each other.")
            }
            signed.append(("If-Match", etag))
        }
        var query: [(String, String)] = []
        if let value = body.responseContentDisposition { query.append(("response-content-disposition", value)) }
        if let value = body.responseContentType { query.append(("response-content-type", value)) }
        if !query.isEmpty && method != "GET" {
            throw APIError(.optionNotSupported, "responseContentDisposition and responseContentType apply to get only.")
        }
        // Written by hand: this is the hottest answer a frontend asks for. The URL is signed
        // straight into the answer.
        var json = JSONText()
        json.begin(capacity: objectKey.utf8.count * 4 + 1024)
        json.plainStringField("url") { out in
            context.presigner.appendURL(
                to: &out, method: method, key: objectKey, expires: expires, headers: signed, query: query, at: issued)
        }
        json.field("method", .string(method))
        json.stringsField("headers", signed)
        json.plainStringField("expiresAt") { Timestamp.append(milliseconds: Int64(issued + expires) * 1000, to: &$0) }
        json.field("objectKey", .string(objectKey))
        json.end()
        return Responses.json(200, bytes: json.bytes)
    }

    private func presignPost(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        let body = try PostRequest(try await Responses.fields(from: http, known: PostRequest.known))
        let objectKey = try context.policy.granted(.write, level: body.accessLevel, key: body.key, identity: identity)
        let issued = context.now()
        let expires = try lifetime(body.expiresIn, now: issued)
        let ceiling = min(context.engine.maxObjectSize, 5 << 30)  // S3 takes at most 5 GiB in one POST
        let maxSize = body.maxSize ?? ceiling
        guard (1...ceiling).contains(maxSize) else { throw APIError.validation("maxSize must be from 1 to \(ceiling).") }
        let form = context.presigner.postForm(
            key: objectKey, fields: AttributeFields.headers(body.attributes), maxSize: maxSize,
            expires: expires, at: issued)
        var json = JSONText()
        json.begin()
        json.field("url", .string(form.url))
        json.stringsField("fields", form.fields)
        json.field("expiresAt", .string(Timestamp.rfc3339(milliseconds: Int64(issued + expires) * 1000)))
        json.field("objectKey", .string(objectKey))
        json.end()
        return Responses.json(200, bytes: json.bytes)
    }

    /// The URL's lifetime: the default, or what the client asks up to the maximum, and never
    /// past the moment temporary credentials stop working.
    private func lifetime(_ asked: Int?, now: Int) throws(APIError) -> Int {
        let expires = asked ?? context.settings.presignExpiry
        guard (1...context.settings.presignMaxExpiry).contains(expires) else {
            throw APIError.validation("expiresIn must be from 1 to \(context.settings.presignMaxExpiry) seconds.")
        }
        return try context.presigner.lifetime(atMost: expires, now: now)
    }
}
