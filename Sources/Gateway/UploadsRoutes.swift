import Auth
import Foundation
import HTTPServer
import Postgres
import S3
import TransferEngine

/// `/v1/uploads`: client-driven multipart (openapi.yaml, tag `uploads`). The browser sends each part straight
/// to S3 on a presigned URL that pins the part's `Content-Length`, so every part but the last
/// has the same size (what Cloudflare R2 requires); the gateway re-signs part URLs whenever
/// asked, lists the parts itself at completion (browsers often cannot read ETags), and records
/// each upload with its owner in PostgreSQL.
struct UploadsRoutes: Sendable {
    let authenticator: Authenticator
    let policy: AccessPolicy
    let client: S3Client
    let pool: PostgresPool
    let publicEndpoint: S3Endpoint?
    let partSize: Int64
    let maxObjectSize: Int64
    let expiry: Int
    let now: @Sendable () -> Int
    let limits: RequestLimits

    /// Part URLs handed out in one answer; ask `/parts` for the others.
    static let urlsPerAnswer = 1000

    func register(in router: inout Router<RouteHandler>) {
        router.add("POST", "/v1/uploads") { try await create($0.http) }
        router.add("GET", "/v1/uploads/{id}") { try await show($0.http, id: $0.parameters["id"] ?? "") }
        router.add("POST", "/v1/uploads/{id}/parts") { try await sign($0.http, id: $0.parameters["id"] ?? "") }
        router.add("POST", "/v1/uploads/{id}/complete") { try await complete($0.http, id: $0.parameters["id"] ?? "") }
        router.add("DELETE", "/v1/uploads/{id}") { try await abort($0.http, id: $0.parameters["id"] ?? "") }
    }

    struct Upload: Sendable {
        let id: String
        let owner: String
        let objectKey: String
        let s3UploadID: String
        let size: Int64
        let plan: PartPlan
        let state: String
        let etag: String?
    }

    // MARK: create

    private func create(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try authenticator.identity(of: http)
        guard let owner = identity.id else { throw APIError.unauthorized }
        try limits.admitCreation(owner)
        let fields = try await Responses.fields(from: http)
        let level = try fields.accessLevel("accessLevel")
        let key = try fields.requiredString("key")
        guard let size = try fields.integer("size") else { throw APIError.validation("size is required (bytes).") }
        guard (0...maxObjectSize).contains(size) else { throw APIError.validation("size must be from 0 to \(maxObjectSize).") }
        let requested = try fields.integer("partSize") ?? partSize
        let plan: PartPlan
        do {
            plan = try PartPlan(objectSize: size, requestedPartSize: requested)
        } catch {
            throw APIError.validation("partSize must be from 5 MiB to 5 GiB.")
        }
        let objectKey = try policy.granted(.write, level: level, key: key, identity: identity,
                                           target: try fields.string("targetIdentityId"))
        var attributes = ObjectAttributes()
        if let contentType = try fields.string("contentType") {
            try HeaderRules.checkValue(contentType, field: "contentType")
            attributes.contentType = contentType
        }
        if let metadata = try fields.stringMap("metadata") {
            _ = try HeaderRules.metadataHeaders(metadata)
            attributes.metadata = metadata
        }
        let id = UUID().uuidString.lowercased()
        let pool = self.pool, client = self.client, quota = limits.quota, chosen = attributes
        // Recorded before S3 is asked (`creating`), within the owner's quota: a crash between the
        // two leaves a record the janitor can act on, never an upload nobody knows.
        let s3UploadID = try await Shield.run {
            try await pool.withTransaction { connection in
                try OwnerLimits.check(quota, owner: owner, creating: .clientUpload, on: connection)
                try connection.query("""
                    INSERT INTO uploads (id, owner, object_key, s3_upload_id, size, part_size, part_count, state)
                    VALUES (\(id)::uuid, \(owner), \(objectKey), NULL, \(size), \(plan.partSize), \(plan.partCount), 'creating')
                    """)
            }
            let created: String
            do {
                created = try await client.createMultipartUpload(key: objectKey, attributes: chosen)
            } catch {
                _ = try? await pool.withConnection { connection in
                    try connection.query("UPDATE uploads SET state = 'aborted', completed_at = now() WHERE id = \(id)::uuid")
                }
                throw error
            }
            try await pool.withConnection { connection in
                try connection.query("""
                    UPDATE uploads SET s3_upload_id = \(created), state = 'open', touched_at = now() WHERE id = \(id)::uuid
                    """)
            }
            return created
        }
        let upload = Upload(id: id, owner: owner, objectKey: objectKey, s3UploadID: s3UploadID, size: size, plan: plan,
                            state: "open", etag: nil)
        let numbers = Array(1...min(plan.partCount, Self.urlsPerAnswer))
        var text = JSONText()
        text.begin(capacity: 512 * numbers.count + 256)
        text.field("uploadId", .string(id))
        text.field("objectKey", .string(objectKey))
        text.field("partSize", .int(Int(plan.partSize)))
        text.field("partCount", .int(plan.partCount))
        try appendParts(&text, upload, numbers)
        text.end()
        var response = Responses.json(201, bytes: text.bytes)
        response.headers.add("Location", "/v1/uploads/\(id)")
        return response
    }

    /// `parts: [{partNumber, url}]` and `expiresAt`. Each URL signs the part's exact length,
    /// and lives no longer than temporary S3 credentials do.
    private func appendParts(_ text: inout JSONText, _ upload: Upload, _ numbers: [Int]) throws(APIError) {
        let issued = now()
        let expiry = try client.lifetime(atMost: self.expiry, now: issued)
        let target = publicEndpoint
        var parts: [UInt8] = [UInt8(ascii: "[")]
        for (index, number) in numbers.enumerated() {
            let url = client.presignedURL(method: "PUT", key: upload.objectKey, expires: expiry,
                                          headers: [("Content-Length", String(upload.plan.size(ofPart: number)))],
                                          query: [("partNumber", String(number)), ("uploadId", upload.s3UploadID)],
                                          at: issued, endpointOverride: target)
            var part = JSONText()
            part.begin()
            part.field("partNumber", .int(number))
            part.field("url", .string(url))
            part.end()
            if index > 0 { parts.append(UInt8(ascii: ",")) }
            parts += part.bytes
        }
        parts.append(UInt8(ascii: "]"))
        text.rawField("parts", parts)
        text.field("expiresAt", .string(Timestamp.rfc3339(milliseconds: Int64(issued + expiry) * 1000)))
    }

    // MARK: the rest

    /// The caller's own upload (404 for anyone else's, and once aborted).
    private func upload(_ http: HTTPRequest, id: String) async throws -> Upload {
        let identity = try authenticator.identity(of: http)
        guard UUID(uuidString: id) != nil, let caller = identity.id else { throw APIError.notFound }
        let rows = try await pool.withConnection { connection in
            try connection.query("""
                SELECT id::text AS id, owner, object_key, s3_upload_id, size, part_size, part_count, state, etag
                FROM uploads WHERE id = \(id.lowercased())::uuid
                """)
        }
        // An aborted upload is gone: it answers as one that never was; one still being created
        // (or whose creation died half way) has nothing to show yet.
        guard let row = rows.first, AccessPolicy.same(try row.string("owner"), caller),
              !["aborted", "creating"].contains(try row.string("state")), let s3UploadID = try row.optionalString("s3_upload_id") else {
            throw APIError.notFound
        }
        let size = Int64(try row.int("size"))
        guard let plan = try? PartPlan(objectSize: size, requestedPartSize: Int64(try row.int("part_size"))) else {
            throw APIError.internalError
        }
        return Upload(id: try row.string("id"), owner: try row.string("owner"), objectKey: try row.string("object_key"),
                      s3UploadID: s3UploadID, size: size, plan: plan, state: try row.string("state"),
                      etag: try row.optionalString("etag"))
    }

    /// What S3 holds of an open upload. S3 no longer having it (the janitor aborted it past
    /// `GATEWAY_UPLOAD_TTL` between our read of the record and this call, or someone aborted it
    /// outside the gateway) is the answer for a gone upload, not a server error.
    private func heldParts(_ upload: Upload) async throws -> [UploadedPart] {
        do {
            return try await client.listParts(key: upload.objectKey, uploadId: upload.s3UploadID)
        } catch let error as S3Error where error.code == "NoSuchUpload" {
            throw Self.gone
        }
    }

    static let gone = APIError(status: 404, code: "not_found", detail: "The upload has expired or was aborted.")

    /// An S3 part number (a whole number from 1 to 10,000), checked before it becomes an Int:
    /// a Double out of Int's range would trap the whole process.
    private static func partNumber(_ value: JSONValue?) -> Int? {
        guard case .number(let n)? = value, n == n.rounded(), n >= 1, n <= Double(PartPlan.maximumPartCount) else { return nil }
        return Int(n)
    }

    private func requireOpen(_ upload: Upload) throws(APIError) {
        guard upload.state == "open" else {
            throw APIError(status: 409, code: "upload_not_open", detail: "The upload is \(upload.state).")
        }
    }

    private func sign(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let upload = try await upload(http, id: id)
        try requireOpen(upload)
        let fields = try await Responses.fields(from: http)
        guard let values = try fields.array("partNumbers"), !values.isEmpty, values.count <= Self.urlsPerAnswer else {
            throw APIError.validation("partNumbers must list 1 to \(Self.urlsPerAnswer) part numbers.")
        }
        var numbers: [Int] = []
        for value in values {
            guard let n = Self.partNumber(value) else {
                throw APIError.validation("part numbers must be whole numbers from 1 to 10000.")
            }
            // A valid part number, but past this upload's last part: the upload's state says no.
            guard n <= upload.plan.partCount else {
                throw APIError(status: 409, code: "part_out_of_range",
                               detail: "This upload has \(upload.plan.partCount) parts; part \(n) is not one of them.")
            }
            numbers.append(n)
        }
        // Asking for part URLs is activity: the upload is not idle while its client works on it.
        try await pool.withConnection { connection in
            try connection.query("UPDATE uploads SET touched_at = now() WHERE id = \(upload.id)::uuid")
        }
        var text = JSONText()
        text.begin(capacity: 512 * numbers.count + 128)
        try appendParts(&text, upload, numbers)
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    private func show(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let upload = try await upload(http, id: id)
        let held = upload.state == "open" ? try await heldParts(upload) : []
        let bytes = upload.state == "completed" ? upload.size : held.reduce(Int64(0)) { $0 + $1.size }
        var text = JSONText()
        text.begin()
        text.field("uploadId", .string(upload.id))
        text.field("state", .string(upload.state))
        text.field("objectKey", .string(upload.objectKey))
        text.field("size", .int(Int(upload.size)))
        text.field("partSize", .int(Int(upload.plan.partSize)))
        text.field("partCount", .int(upload.plan.partCount))
        var parts: [UInt8] = [UInt8(ascii: "[")]
        for (index, part) in held.enumerated() {
            var item = JSONText()
            item.begin()
            item.field("partNumber", .int(part.partNumber))
            item.field("size", .int(Int(part.size)))
            item.field("etag", .string(part.etag))
            item.end()
            if index > 0 { parts.append(UInt8(ascii: ",")) }
            parts += item.bytes
        }
        parts.append(UInt8(ascii: "]"))
        text.rawField("parts", parts)
        text.field("bytesUploaded", .int(Int(bytes)))
        let fraction = upload.size > 0 ? min(1, Double(bytes) / Double(upload.size)) : (upload.state == "completed" ? 1 : 0)
        text.field("fractionCompleted", .double((fraction * 10_000).rounded() / 10_000))
        if let etag = upload.etag { text.field("etag", .string(etag)) } else { text.rawField("etag", Array("null".utf8)) }
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    private func complete(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let upload = try await upload(http, id: id)
        try requireOpen(upload)
        let fields = try await Responses.fields(from: http)
        // The parts S3 holds are the truth; a client's list, when sent, must agree with it.
        let held = try await heldParts(upload)
        let byNumber = Dictionary(held.map { ($0.partNumber, $0) }, uniquingKeysWith: { a, _ in a })
        if let sent = try fields.array("parts") {
            for value in sent {
                guard case .object(let members) = value, let n = Self.partNumber(members["partNumber"]),
                      case .string(let etag)? = members["etag"] else {
                    throw APIError.validation("parts must be [{partNumber, etag}], part numbers whole from 1 to 10000.")
                }
                guard let part = byNumber[n], MultipartETag.same(part.etag, etag) else {
                    throw APIError(status: 409, code: "part_mismatch", detail: "Part \(n) is not the one S3 holds.")
                }
            }
        }
        var parts: [(partNumber: Int, etag: String)] = []
        for number in 1...upload.plan.partCount {
            guard let part = byNumber[number], part.size == upload.plan.size(ofPart: number) else {
                throw APIError(status: 409, code: "parts_missing",
                               detail: "Part \(number) of \(upload.plan.partCount) is missing or not \(upload.plan.size(ofPart: number)) bytes.")
            }
            parts.append((number, part.etag))
        }
        let client = self.client, pool = self.pool, chosen = parts
        // Completion and its record run to their end even if the client hangs up meanwhile.
        let etag: String = try await Shield.run {
            let etag: String
            do {
                etag = try await client.completeMultipartUpload(key: upload.objectKey, uploadId: upload.s3UploadID, parts: chosen)
            } catch let error as S3Error where error.code == "NoSuchUpload" {
                throw Self.gone
            }
            let head = try await client.headObject(key: upload.objectKey)
            guard head.size == upload.size else {
                throw APIError(status: 409, code: "size_mismatch", detail: "The object is \(head.size) bytes, not \(upload.size).")
            }
            try await pool.withConnection { connection in
                try connection.query("""
                    UPDATE uploads SET state = 'completed', etag = \(etag), completed_at = now() WHERE id = \(upload.id)::uuid
                    """)
            }
            return etag
        }
        var text = JSONText()
        text.begin()
        text.field("objectKey", .string(upload.objectKey))
        text.field("size", .int(Int(upload.size)))
        text.field("etag", .string(etag))
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    private func abort(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let upload = try await upload(http, id: id)
        guard upload.state != "completed" else {
            throw APIError(status: 409, code: "upload_not_open", detail: "The upload is completed; delete the object instead.")
        }
        if upload.state == "open" {
            let client = self.client, pool = self.pool
            try await Shield.run {
                try await client.abortIfOpen(key: upload.objectKey, uploadId: upload.s3UploadID)
                try await pool.withConnection { connection in
                    try connection.query("UPDATE uploads SET state = 'aborted', completed_at = now() WHERE id = \(upload.id)::uuid")
                }
            }
        }
        return HTTPResponse(status: 204)
    }
}
