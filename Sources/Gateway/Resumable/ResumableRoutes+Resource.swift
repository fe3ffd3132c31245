import HTTPServer
import TransferEngine

/// The upload resource at `/v1/resumable/{id}`: offset retrieval (`HEAD`), append (`PATCH`),
/// cancellation (`DELETE`), and the bytes of creation and append alike.
extension ResumableRoutes {
    /// How long a request waits for another one streaming the same upload to end.
    static let busyWait = Duration.seconds(2)

    /// A request's version, or the refusal of one the gateway does not speak.
    private func version(of http: HTTPRequest) throws(APIError) -> InteropVersion {
        guard let version = InteropVersion.ofResourceRequest(http.headers) else {
            throw APIError(
                .interopVersionUnsupported,
                "Upload-Draft-Interop-Version must be one of \(InteropVersion.supported.map(String.init).joined(separator: ", ")).")
        }
        return version
    }

    /// The caller's active upload (draft: anything else is 404).
    private func activeUpload(_ http: HTTPRequest, id: String) async throws -> Job {
        switch try await resource.find(http, id: id) {
        case .found(let job) where job.state != .failed && job.state != .canceled: return job
        case .found, .missing, .ended: throw APIError(.notFound, "No such upload, or it was canceled, failed or expired.")
        }
    }

    /// Offset retrieval (draft -01 §5, -05 §5): 204 with the offset and completeness, never cached.
    func head(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let version = try version(of: http)
        for field in ["upload-offset", version.completenessField.lowercased(), "upload-length"] where http.headers[field] != nil {
            throw APIError.validation("Offset retrieval carries no Upload-Offset, \(version.completenessField) or Upload-Length.")
        }
        let job = await resource.settled(try await resource.afterStreaming(try await activeUpload(http, id: id)))
        let complete = job.state == .completed
        var response = HTTPResponse(status: 204, headers: HTTPHeaders([("Cache-Control", "no-store")]))
        response.headers.add("Upload-Offset", String(complete ? job.bytesTotal ?? job.bytesCommitted : job.bytesCommitted))
        let field = version.completeness(complete)
        response.headers.add(field.0, field.1)
        if version.knowsLengthAndLimit, let length = job.bytesTotal { response.headers.add("Upload-Length", String(length)) }
        if let limit = limit(version, job) { response.headers.add(limit.0, limit.1) }
        return response
    }

    /// Upload append (draft -01 §6, -05 §6): the content from `Upload-Offset` on.
    func append(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let version = try version(of: http)
        if version.requiresPartialUpload,
            http.headers["content-type"]?.lowercased().hasPrefix("application/partial-upload") != true
        {
            throw APIError(.unsupportedMediaType, "An append's content must be application/partial-upload.")
        }
        guard let offset = http.headers["upload-offset"].flatMap(StructuredField.integer) else {
            throw APIError.validation("Upload-Offset must be the upload's offset, a non-negative integer.")
        }
        let complete: Bool
        switch version.completes(http.headers) {
        case .failure(let invalid): throw APIError.validation("\(invalid.name) must be ?0 or ?1.")
        case .success(let said?): complete = said
        case .success(nil) where version.number == 3: complete = true  // draft -01: omitted means complete
        case .success(nil): throw APIError.validation("An append says Upload-Complete (?0 or ?1).")
        }
        let job = try await resource.afterStreaming(try await activeUpload(http, id: id))
        let content = http.body.expectedLength.map(Int64.init)
        if job.state == .completed {
            // The answer to the last request was lost: the same final answer again (draft -09 on).
            if offset == (job.bytesTotal ?? job.bytesCommitted) && complete && content == 0 {
                return completed(job, version, location: nil)
            }
            throw APIError(.uploadCompleted, "The upload is complete; it takes no more bytes.")
        }
        if let length = job.bytesTotal {
            let said = version.knowsLengthAndLimit ? http.headers["upload-length"].flatMap(StructuredField.integer) : nil
            if let said, said != length {
                throw APIError(.lengthMismatch, "The upload's length is \(length) bytes, not \(said).")
            }
            if complete, let content, offset + content != length {
                throw APIError(.lengthMismatch, "The upload's length is \(length) bytes; this content ends at \(offset + content).")
            }
        }
        return try await receive(http, job: job, offset: offset, complete: complete, version: version, location: nil)
    }

    /// Upload cancellation (draft -01 §7, -05 §7): 204, and the upload is gone.
    func cancel(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let version = try version(of: http)
        for field in ["upload-offset", version.completenessField.lowercased()] where http.headers[field] != nil {
            throw APIError.validation("A cancellation carries no Upload-Offset or \(version.completenessField).")
        }
        switch try await resource.terminate(try await activeUpload(http, id: id)) {
        case .terminated: return HTTPResponse(status: 204)
        case .completing: throw APIError.jobCompleting
        case .completed: throw APIError(.jobNotPending, "The upload is complete; delete the object instead (DELETE /v1/objects).")
        }
    }

    /// Streams the request's content into the job from `offset` and answers: 201 with the job
    /// once the upload is complete, 201 with the new offset while it is not, else the refusal of
    /// the outcome (the same codes as `/v1/jobs/{id}/data`), with the offset where known. A
    /// creation's 104 (`informational`) goes out when the receiver first reads the body.
    func receive(
        _ http: HTTPRequest, job: Job, offset: Int64, complete: Bool, version: InteropVersion?, location: String?,
        informational: HTTPHeaders? = nil
    ) async throws -> HTTPResponse {
        let uploads = jobs.receiver, watched = WatchedBody(http, informational: informational)
        let body: any ByteSource = complete ? watched : UnfinishedBody(body: watched)
        var outcome = try await Shield.run { try await uploads.receive(jobID: job.id, offset: offset, body: body) }
        // Turned away unread: the request before this one (whose connection the client saw die)
        // may be handing the job back this instant. Its bytes are saved; try again shortly.
        let deadline = ContinuousClock.now + Self.busyWait
        while case .busy = outcome, !watched.wasRead, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(25))
            outcome = try await Shield.run { try await uploads.receive(jobID: job.id, offset: offset, body: body) }
        }
        switch outcome {
        case .completed:
            return completed(try await jobs.store.job(id: job.id) ?? job, version, location: location)
        case .waiting(let committed) where complete:
            // The content ended short of the upload's length (chunked, or cut off).
            return refusal(
                APIError(.lengthMismatch, "The content ended at \(committed) bytes, short of the upload's length; send the rest."),
                version, offset: committed, complete: false, location: location)
        case .waiting(let committed):
            var response = HTTPResponse(status: 201, headers: HTTPHeaders([("Upload-Offset", String(committed))]))
            if let version {
                let field = version.completeness(false)
                response.headers.add(field.0, field.1)
                if let limit = limit(version, job) { response.headers.add(limit.0, limit.1) }
            }
            if let location { response.headers.add("Location", location) }
            return response
        case .offsetMismatch(let committed):
            return refusal(
                APIError(.offsetMismatch, "The upload is at \(committed) bytes; send from there."), version, offset: committed,
                complete: false, location: location,
                extra: ["expected-offset": .int(Int(committed)), "provided-offset": .int(Int(offset))])
        default:
            guard let error = UploadAnswer.refusal(for: outcome, in: .jobs) else { throw APIError.internalError }
            return refusal(error, version, offset: UploadAnswer.committed(after: outcome), complete: false, location: location)
        }
    }
}
