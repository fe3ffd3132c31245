import Auth
import HTTPServer
import TransferEngine

/// Resumable Uploads for HTTP (draft-ietf-httpbis-resumable-upload, interop versions 3, 6, 7
/// and 8; see `InteropVersion`) at `/v1/resumable/`, the protocol URLSession speaks by itself
/// from iOS 17 and macOS 14. An upload is an `upload` job, as a tus upload is: its URL is
/// `/v1/resumable/{job id}`, its offset the job's `bytesCommitted`, its bytes go through the
/// same `UploadReceiver`, so progress, events, quotas, leases and the janitor apply unchanged.
///
/// Creation is `POST /v1/resumable/?accessLevel=…&key=…` with `Upload-Draft-Interop-Version`
/// and the completeness field; the job is made before any byte is read and its URL goes out at
/// once in a `104 Upload Resumption Supported`, so a client cut off mid-body resumes with `HEAD`
/// (the offset) and `PATCH` (the rest). A creation without a version the gateway speaks is an
/// ordinary upload of the whole body, with no 104 (the drafts' "Draft Version Identification").
struct ResumableRoutes: Sendable {
    let context: RouteContext
    let jobs: JobPorts

    var resource: UploadResource { UploadResource(context: context, jobs: jobs) }

    func register(in router: inout Router<GatewayRoute>) {
        router.add("OPTIONS", "/v1/resumable/") { options($0.http) }
        router.add("POST", "/v1/resumable/") { try await create($0.http) }
        router.add("HEAD", "/v1/resumable/{id}") { try await head($0.http, id: $0.parameters["id"] ?? "") }
        router.add("PATCH", "/v1/resumable/{id}") { try await append($0.http, id: $0.parameters["id"] ?? "") }
        router.add("DELETE", "/v1/resumable/{id}") { try await cancel($0.http, id: $0.parameters["id"] ?? "") }
    }

    /// The limits a client may learn before it creates an upload (draft -05 §8.2: `Upload-Limit`
    /// in the answer to `OPTIONS`).
    /// A version the gateway does not speak is refused, as on every other request.
    private func options(_ http: HTTPRequest) -> HTTPResponse {
        let version: InteropVersion
        switch InteropVersion.detect(http.headers) {
        case .supported(let named): version = named
        case .absent: version = InteropVersion(number: 8)
        case .unsupported:
            return Responses.problem(
                APIError(
                    .interopVersionUnsupported,
                    "Upload-Draft-Interop-Version must be one of \(InteropVersion.supported.map(String.init).joined(separator: ", ")).")
            )
        }
        var response = HTTPResponse(status: 204, headers: HTTPHeaders([("Allow", "OPTIONS, POST")]))
        if let limit = version.limit(maxSize: context.engine.maxObjectSize, lifetime: context.settings.uploadTTL) {
            response.headers.add(limit.0, limit.1)
        }
        return response
    }

    // MARK: answers

    /// A refusal: problem+json with the upload's offset, completeness and URL where known.
    func refusal(
        _ error: APIError, _ version: InteropVersion?, offset: Int64? = nil, complete: Bool? = nil,
        location: String? = nil, extra: KeyValuePairs<String, LogValue> = [:]
    ) -> HTTPResponse {
        var response = Responses.problem(error, extra: extra)
        if let offset { response.headers.add("Upload-Offset", String(offset)) }
        if let version, let complete {
            let field = version.completeness(complete)
            response.headers.add(field.0, field.1)
        }
        if let location { response.headers.add("Location", location) }
        return response
    }

    /// The answer to the request that completed the upload (or to one after it, replayed):
    /// 201 and the job, as `GET /v1/jobs/{id}` shows it (the drafts: "the response that matches
    /// what the resource ... would have generated" for the whole representation at once).
    func completed(_ job: Job, _ version: InteropVersion?, location: String?) -> HTTPResponse {
        var response = Responses.json(201, bytes: JobRoutes.json(job))
        response.headers.add("Upload-Offset", String(job.bytesTotal ?? job.bytesCommitted))
        if let version {
            let field = version.completeness(true)
            response.headers.add(field.0, field.1)
        }
        if let location { response.headers.add("Location", location) }
        return response
    }

    /// The upload resource's URL as the client reached the gateway.
    func location(_ http: HTTPRequest, id: String) -> String { "\(JobRoutes.origin(of: http))/v1/resumable/\(id)" }

    /// `Upload-Limit` for an upload: the largest object, and the time left before it expires.
    func limit(_ version: InteropVersion, _ job: Job) -> (String, String)? {
        version.limit(maxSize: context.engine.maxObjectSize, lifetime: resource.expires(job) - context.now())
    }
}
