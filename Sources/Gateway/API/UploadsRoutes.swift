import Auth
import Foundation
import HTTPServer
import TransferEngine

/// `/v1/uploads`: client-driven multipart (openapi.yaml, tag `uploads`). The browser sends each
/// part straight to S3 on a presigned URL that pins the part's `Content-Length`, so every part
/// but the last has the same size (what Cloudflare R2 requires); the gateway re-signs part URLs
/// whenever asked, lists the parts itself at completion (browsers often cannot read ETags), and
/// records each upload with its owner (`ClientUploadStore`).
struct UploadsRoutes: Sendable {
    let context: RouteContext
    let jobs: JobPorts

    static let createFields = FieldNames(
        AttributeFields.names.union([
            "accessLevel", "key", "targetIdentityId", "size", "partSize", "checksumAlgorithm",
        ]))

    /// Part URLs handed out in one answer; ask `/parts` for the others.
    static let urlsPerAnswer = 1000

    func register(in router: inout Router<GatewayRoute>) {
        router.add("POST", "/v1/uploads") { try await create($0.http) }
        router.add("GET", "/v1/uploads") { try await list($0.http) }
        router.add("GET", "/v1/uploads/{id}") { try await show($0.http, id: $0.parameters["id"] ?? "") }
        router.add("POST", "/v1/uploads/{id}/parts") { try await sign($0.http, id: $0.parameters["id"] ?? "") }
        router.add("POST", "/v1/uploads/{id}/complete") { try await complete($0.http, id: $0.parameters["id"] ?? "") }
        router.add("DELETE", "/v1/uploads/{id}") { try await abort($0.http, id: $0.parameters["id"] ?? "") }
    }

    /// An open (or ended) upload the caller owns, with its plan.
    struct Upload: Sendable {
        let record: ClientUpload
        let s3UploadID: String
        let plan: PartPlan

        var id: String { record.id }
        var objectKey: String { record.objectKey }
        var size: Int64 { record.size }
    }

    // MARK: create

    private func create(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        guard let owner = identity.id else { throw APIError.unauthorized }
        try await context.limits.admitCreation(owner)
        let fields = try await Responses.fields(from: http, known: Self.createFields)
        // A repeat is answered afresh (its part URLs signed now), not from a stored copy: an
        // answer of up to 1,000 URLs is not kept, and old URLs may have expired.
        return try await jobs.idempotency.run(
            http, owner: owner, scope: "uploads", request: fields.canonical,
            replay: { first in
                guard let id = first.location?.split(separator: "/").last, let record = try await jobs.clientUploads.upload(id: String(id)),
                    AccessPolicy.same(record.owner, owner), record.state == .open || record.state == .completed,
                    let s3UploadID = record.s3UploadID,
                    let plan = try? PartPlan(objectSize: record.size, requestedPartSize: record.partSize)
                else { throw APIError.notFound }
                return try created(Upload(record: record, s3UploadID: s3UploadID, plan: plan))
            }
        ) {
            try await create(fields, identity: identity, owner: owner)
        }
    }

    private func create(_ fields: JSONFields, identity: Identity, owner: String) async throws -> HTTPResponse {
        let level = try fields.accessLevel("accessLevel")
        let key = try fields.requiredString("key")
        guard let size = try fields.integer("size") else { throw APIError.validation("size is required (bytes).") }
        let maxObjectSize = context.engine.maxObjectSize
        guard (0...maxObjectSize).contains(size) else { throw APIError.validation("size must be from 0 to \(maxObjectSize).") }
        let requested = try fields.integer("partSize") ?? context.engine.partSize
        let plan: PartPlan
        do {
            plan = try PartPlan(objectSize: size, requestedPartSize: requested)
        } catch {
            throw APIError.validation("partSize must be from 5 MiB to 5 GiB.")
        }
        let objectKey = try context.policy.granted(
            .write, level: level, key: key, identity: identity,
            target: try fields.string("targetIdentityId"))
        let attributes = try AttributeFields.read(fields)
        let partChecksum = try Self.partChecksum(fields)
        let record = ClientUpload(
            id: UUID().uuidString.lowercased(), owner: owner, objectKey: objectKey, s3UploadID: nil,
            size: size, partSize: plan.partSize, partCount: plan.partCount, state: .creating, partChecksum: partChecksum)
        let store = jobs.clientUploads, objects = jobs.objects, quota = context.limits.quota, chosen = attributes
        // Recorded before S3 is asked (`creating`), within the owner's quota: a crash between the
        // two leaves a record the janitor can act on, never an upload nobody knows.
        let s3UploadID = try await Shield.run {
            try await store.begin(record, quota: quota)
            let created: String
            do {
                created = try await objects.createMultipartUpload(key: objectKey, attributes: chosen, checksum: partChecksum)
            } catch {
                _ = try? await store.aborted(id: record.id)
                throw error
            }
            try await store.opened(id: record.id, s3UploadID: created)
            return created
        }
        var opened = record
        opened.state = .open
        return try created(Upload(record: opened, s3UploadID: s3UploadID, plan: plan))
    }

    /// 201 with the upload and URLs for its first parts (none for an upload whose part URLs
    /// sign each part's checksum: the client asks `/parts` with them).
    private func created(_ upload: Upload) throws(APIError) -> HTTPResponse {
        let plan = upload.plan, record = upload.record, objectKey = upload.objectKey
        let numbers = record.partChecksum == nil ? Array(1...min(plan.partCount, Self.urlsPerAnswer)) : []
        var text = JSONText()
        text.begin(capacity: 512 * numbers.count + 256)
        text.field("uploadId", .string(record.id))
        text.field("objectKey", .string(objectKey))
        text.field("partSize", .int(Int(plan.partSize)))
        text.field("partCount", .int(plan.partCount))
        Self.appendChecksumAlgorithm(&text, record)
        try appendParts(&text, upload, numbers)
        text.end()
        var response = Responses.json(201, bytes: text.bytes)
        response.headers.add("Location", "/v1/uploads/\(record.id)")
        return response
    }

    // MARK: the rest

    /// The caller's own upload (404 for anyone else's, once aborted, and while still created).
    func upload(_ http: HTTPRequest, id: String) async throws -> Upload {
        let (record, _) = try await OwnedResource.find(
            http, id: id, authenticator: context.authenticator,
            load: { try await jobs.clientUploads.upload(id: $0) }, owner: \.owner)
        guard record.state != .creating, record.state != .aborted, let s3UploadID = record.s3UploadID else {
            throw APIError.notFound
        }
        guard let plan = try? PartPlan(objectSize: record.size, requestedPartSize: record.partSize) else { throw APIError.internalError }
        return Upload(record: record, s3UploadID: s3UploadID, plan: plan)
    }

    /// What S3 holds of an open upload. S3 no longer having it (the janitor aborted it past
    /// `GATEWAY_UPLOAD_TTL` between our read of the record and this call, or someone aborted it
    /// outside the gateway) is the answer for a gone upload, not a server error.
    func heldParts(_ upload: Upload) async throws -> [RecordedPart] {
        let objects = jobs.objects
        do {
            return try await objects.listParts(key: upload.objectKey, uploadID: upload.s3UploadID)
        } catch let error as TransferError where error.code == .noSuchUpload {
            throw Self.gone
        }
    }

    static let gone = APIError(.notFound, "The upload has expired or was aborted.")

    /// An S3 part number (a whole number from 1 to 10,000), checked before it becomes an Int:
    /// a Double out of Int's range would trap the whole process.
    static func partNumber(_ value: JSONValue?) -> Int? {
        guard case .number(let n)? = value, n == n.rounded(), n >= 1, n <= Double(PartPlan.maximumPartCount) else { return nil }
        return Int(n)
    }

    func requireOpen(_ upload: Upload) throws(APIError) {
        guard upload.record.state == .open else {
            throw APIError(.uploadNotOpen, "The upload is \(upload.record.state.rawValue).")
        }
    }

    private func sign(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let upload = try await upload(http, id: id)
        try requireOpen(upload)
        let fields = try await Responses.fields(from: http, known: ["partNumbers", "parts"])
        if upload.record.partChecksum != nil || fields.has("parts") { return try await signChecked(upload, fields) }
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
                throw APIError(.partOutOfRange, "This upload has \(upload.plan.partCount) parts; part \(n) is not one of them.")
            }
            numbers.append(n)
        }
        // Asking for part URLs is activity: the upload is not idle while its client works on it.
        try await jobs.clientUploads.touch(id: upload.id)
        var text = JSONText()
        text.begin(capacity: 512 * numbers.count + 128)
        try appendParts(&text, upload, numbers)
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    private func show(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        Responses.json(200, bytes: try await describe(try await upload(http, id: id)))
    }

    /// `GET /v1/uploads`: the caller's open uploads, newest first, each as `show` answers (an app
    /// that restarts finds what it was sending).
    private func list(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        guard let owner = identity.id else { throw APIError.unauthorized }
        let query = try QueryParameters.read(http)
        let limit = try PageLimit.read(query, fallback: 20, maximum: 100)
        var cursor: String?
        if let raw = query["cursor"] {
            // A cursor is the last upload of a page this identity was given.
            guard UUID(uuidString: raw) != nil, let mark = try await jobs.clientUploads.upload(id: raw.lowercased()),
                AccessPolicy.same(mark.owner, owner)
            else {
                throw APIError.validation("cursor is not one this API gave.")
            }
            cursor = mark.id
        }
        let records = try await jobs.clientUploads.open(owner: owner, limit: limit, after: cursor)
        var items: [UInt8] = [UInt8(ascii: "[")]
        for (index, record) in records.enumerated() {
            guard let s3UploadID = record.s3UploadID,
                let plan = try? PartPlan(objectSize: record.size, requestedPartSize: record.partSize)
            else { continue }
            let held: [UInt8]
            do {
                held = try await describe(Upload(record: record, s3UploadID: s3UploadID, plan: plan))
            } catch let error as APIError where error == Self.gone {
                continue  // expired between the read and ListParts: not open any more
            }
            if index > 0 && items.count > 1 { items.append(UInt8(ascii: ",")) }
            items += held
        }
        items.append(UInt8(ascii: "]"))
        var text = JSONText()
        text.begin(capacity: items.count + 128)
        text.rawField("uploads", items)
        if records.count == limit, let last = records.last {
            text.field("nextCursor", .string(last.id))
        } else {
            text.rawField("nextCursor", Array("null".utf8))
        }
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    /// The upload as `GET /v1/uploads/{id}` shows it: its state, the parts S3 holds, the bytes.
    private func describe(_ upload: Upload) async throws -> [UInt8] {
        let held = upload.record.state == .open ? try await heldParts(upload) : []
        return Self.json(upload.record, plan: upload.plan, held: held)
    }

    /// The upload as `GET /v1/uploads/{id}` shows it, with `held`: the parts S3 holds of it.
    static func json(_ record: ClientUpload, plan: PartPlan, held: [RecordedPart]) -> [UInt8] {
        let bytes = record.state == .completed ? record.size : held.reduce(Int64(0)) { $0 + $1.size }
        var text = JSONText()
        text.begin()
        text.field("uploadId", .string(record.id))
        text.field("state", .string(record.state.rawValue))
        text.field("objectKey", .string(record.objectKey))
        text.field("size", .int(Int(record.size)))
        text.field("partSize", .int(Int(plan.partSize)))
        text.field("partCount", .int(plan.partCount))
        var parts: [UInt8] = [UInt8(ascii: "[")]
        for (index, part) in held.enumerated() {
            var item = JSONText()
            item.begin()
            item.field("partNumber", .int(part.number))
            item.field("size", .int(Int(part.size)))
            item.field("etag", .string(part.etag))
            item.end()
            if index > 0 { parts.append(UInt8(ascii: ",")) }
            parts += item.bytes
        }
        parts.append(UInt8(ascii: "]"))
        text.rawField("parts", parts)
        text.field("bytesUploaded", .int(Int(bytes)))
        let fraction = record.size > 0 ? min(1, Double(bytes) / Double(record.size)) : (record.state == .completed ? 1 : 0)
        text.field("fractionCompleted", .double((fraction * 10_000).rounded() / 10_000))
        if let etag = record.etag { text.field("etag", .string(etag)) } else { text.rawField("etag", Array("null".utf8)) }
        appendChecksumAlgorithm(&text, record)
        text.rawField("checksum", ChecksumFields.json(record.checksum))
        text.field("createdAt", .string(Timestamp.rfc3339(milliseconds: Int64(record.createdAt * 1000))))
        text.end()
        return text.bytes
    }

    private func abort(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let upload = try await upload(http, id: id)
        guard upload.record.state != .completed else {
            throw APIError(.uploadNotOpen, "The upload is completed; delete the object instead.")
        }
        let store = jobs.clientUploads, cancellation = jobs.cancellation
        guard try await store.claim(id: upload.id, for: .aborting) else {
            // Aborted already (by an earlier request or the janitor): as asked, nothing to do.
            if try await store.upload(id: upload.id)?.state == .aborted { return HTTPResponse(status: 204) }
            throw try await notOpen(upload.id)
        }
        try await Shield.run {
            do {
                try await cancellation.abortUpload(key: upload.objectKey, uploadID: upload.s3UploadID)
            } catch {
                try? await store.unclaim(id: upload.id)
                throw error
            }
            try await store.aborted(id: upload.id)
        }
        return HTTPResponse(status: 204)
    }

    /// The answer to a complete or abort that lost the record to another request.
    func notOpen(_ id: String) async throws -> APIError {
        let state = try await jobs.clientUploads.upload(id: id)?.state
        // Another request is completing or aborting it: ask again later (a request that died
        // with its instance is taken over after `ClientUpload.staleClaimSeconds`).
        if state == .completing || state == .aborting {
            return APIError(
                .uploadNotOpen, "The upload is \(state?.rawValue ?? ""): another request is at it; ask again.", retryAfter: 10)
        }
        return APIError(.uploadNotOpen, "The upload is \(state?.rawValue ?? "gone"): another request completed or aborted it.")
    }
}
