import Auth
import Foundation
import HTTPServer
import TransferEngine

/// `PUT /v1/jobs/{id}/data` (from the start) and `PATCH /v1/jobs/{id}/data` (from
/// `Upload-Offset`, which must equal the job's `bytesCommitted`): an upload job's bytes.
extension JobRoutes {
    func receive(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let (job, identity) = try await visibleJob(http, id: id)
        guard let caller = identity.id, AccessPolicy.same(job.owner, caller) else { throw APIError.forbidden }
        guard job.kind == .upload else { throw APIError.notFound }
        let offset: Int64
        if http.method == "PATCH" {
            let type = http.headers["content-type"]?.lowercased() ?? ""
            guard type.hasPrefix("application/octet-stream") || type.hasPrefix("application/offset+octet-stream") else {
                throw APIError(.unsupportedMediaType, "The body must be application/octet-stream or application/offset+octet-stream.")
            }
            guard let value = http.headers["upload-offset"].flatMap(DecimalNumber.parse) else {
                throw APIError.validation("Upload-Offset must be the job's bytesCommitted, a non-negative integer.")
            }
            offset = value
        } else {
            offset = 0
        }
        guard !job.state.isFinal else {
            throw APIError(.jobNotPending, "The upload is \(job.state.rawValue).")
        }
        guard job.state != .paused else { throw APIError.jobPaused }
        let checksum = try Self.contentDigest(http)
        // The receiver's bookkeeping (parts recorded, the tail staged, the lease handed back) runs
        // to its end even when the client hangs up mid-body.
        let uploads = jobs.receiver, body = RequestBodyBytes(body: http.body)
        let outcome = try await Shield.run { try await uploads.receive(jobID: job.id, offset: offset, body: body, checksum: checksum) }
        return try await UploadAnswer.response(to: outcome, in: .jobs) { _ in
            // Bytes taken: the job as it is now, at the offset it has.
            let current = try await jobs.store.job(id: job.id) ?? job
            var response = Responses.json(200, bytes: json(current, http))
            response.headers.add("Upload-Offset", String(current.bytesCommitted))
            response.headers.add("ETag", Self.etag(current))
            return response
        }
    }
}

extension JobRoutes {
    /// The request's `Content-Digest` as the receiver checks it: computed as the body is read,
    /// and nothing of the request committed unless it matches. Nil without the field, or when
    /// it names no algorithm the gateway verifies.
    static func contentDigest(_ http: HTTPRequest) throws -> UploadReceiver.Checksum? {
        guard let field = http.headers["content-digest"] else { return nil }
        let parsed: ObjectChecksum?
        do {
            parsed = try ContentDigest.parse(field)
        } catch let invalid as ContentDigest.Invalid {
            throw APIError(.invalidContentDigest, "Content-Digest is not an RFC 9530 dictionary: \(invalid.reason).")
        }
        guard let parsed, let expected = parsed.digest else { return nil }
        switch parsed.algorithm {
        case .sha256: return UploadReceiver.Checksum(algorithm: .sha256, expected: expected)
        case .crc32c: return UploadReceiver.Checksum(algorithm: .crc32c, expected: expected)
        }
    }
}

extension Job {
    /// A new `upload` job waiting for its bytes. Its parts are cut as the bytes arrive, so the
    /// part size is fixed now, grown so that a declared size fits in 10,000 parts.
    static func upload(owner: String, objectKey: String, size: Int64?, options: JobOptions, settings: EngineSettings) -> Job {
        var partSize = options.partSize ?? settings.partSize
        if let size, let plan = try? PartPlan(objectSize: size, requestedPartSize: partSize) { partSize = plan.partSize }
        return Job(
            id: UUID().uuidString.lowercased(), owner: owner, kind: .upload, state: .pending, objectKey: objectKey,
            source: .uploaded(tusMetadata: nil), options: options, bytesTotal: size, partSize: partSize)
    }
}

/// The request body as the engine's byte source.
struct RequestBodyBytes: ByteSource {
    let body: RequestBody

    func next() async throws -> ArraySlice<UInt8>? {
        try await body.read()
    }
}
