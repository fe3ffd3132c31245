import Auth
import Crypto
import Foundation
import HTTPServer
import Synchronization
import TransferEngine

/// tus 1.0 at `/v1/tus/` (core, creation, creation-with-upload, termination, expiration,
/// checksum with sha1 and md5), so existing tus clients work unchanged. A tus upload is an
/// `upload` job: its id is the job's, its offset the job's `bytesCommitted`, and its bytes go
/// through the same `UploadReceiver` (parts in S3, the tail in PostgreSQL, the lease keeping two
/// PATCHes from writing at once).
///
/// `Upload-Metadata` names the object: `key` (or else `filename`), `accessLevel` (default
/// `private`), `filetype` or `contentType` for its content type.
struct TusRoutes: Sendable {
    let context: RouteContext
    let jobs: JobPorts

    static let version = "1.0.0"
    static let extensions = "creation,creation-with-upload,termination,expiration,checksum"

    func register(in router: inout Router<GatewayRoute>) {
        router.add("OPTIONS", "/v1/tus/") { _ in options() }
        router.add("OPTIONS", "/v1/tus/{id}") { _ in options() }
        router.add("POST", "/v1/tus/") { try await create($0.http) }
        router.add("HEAD", "/v1/tus/{id}") { try await head($0.http, id: $0.parameters["id"] ?? "") }
        router.add("PATCH", "/v1/tus/{id}") { try await patch($0.http, id: $0.parameters["id"] ?? "") }
        router.add("DELETE", "/v1/tus/{id}") { try await terminate($0.http, id: $0.parameters["id"] ?? "") }
    }

    // MARK: answers

    private func answer(_ status: Int, _ headers: [(String, String)] = []) -> HTTPResponse {
        var response = HTTPResponse(status: status, headers: HTTPHeaders(headers))
        response.headers.add("Tus-Resumable", Self.version)
        return response
    }

    private func refuse(_ code: APIError.Code, _ detail: String, _ headers: [(String, String)] = []) -> HTTPResponse {
        Self.refusal(APIError(code, detail), headers)
    }

    /// A refusal as tus answers it: problem+json naming the protocol version, then `headers`.
    static func refusal(_ error: APIError, _ headers: [(String, String)] = []) -> HTTPResponse {
        var response = Responses.problem(error)
        response.headers.add("Tus-Resumable", version)
        for (name, value) in headers { response.headers.add(name, value) }
        return response
    }

    private func options() -> HTTPResponse {
        answer(
            200,
            [
                ("Tus-Version", Self.version), ("Tus-Extension", Self.extensions),
                ("Tus-Max-Size", String(context.engine.maxObjectSize)), ("Tus-Checksum-Algorithm", "sha1,md5"),
            ])
    }

    /// Every request but OPTIONS names the protocol version it speaks (412 otherwise).
    private func versionRefusal(_ http: HTTPRequest) -> HTTPResponse? {
        guard http.headers["tus-resumable"] != Self.version else { return nil }
        return refuse(.tusVersionUnsupported, "Tus-Resumable must be \(Self.version).", [("Tus-Version", Self.version)])
    }

    /// The upload-job rules tus shares with Resumable Uploads for HTTP.
    private var resource: UploadResource { UploadResource(context: context, jobs: jobs) }

    /// An upload expires `GATEWAY_UPLOAD_TTL` after its last byte (its creation before any).
    private func expires(_ job: Job) -> Int { resource.expires(job) }

    // MARK: creation

    private func create(_ http: HTTPRequest) async throws -> HTTPResponse {
        if let refusal = versionRefusal(http) { return refusal }
        let identity = try context.authenticator.identity(of: http)
        guard let owner = identity.id else { throw APIError.unauthorized }
        try await context.limits.admitCreation(owner)
        // A retried creation is the same upload: the answer gives its offset now.
        let fingerprint = Array("\(http.headers["upload-length"] ?? "")\n\(http.headers["upload-metadata"] ?? "")".utf8)
        return try await jobs.idempotency.run(
            http, owner: owner, scope: "tus", request: fingerprint,
            replay: { first in
                guard let location = first.location, let id = location.split(separator: "/").last,
                    let job = try await jobs.store.job(id: String(id))
                else { throw APIError.notFound }
                return answer(
                    201,
                    [
                        ("Location", location), ("Upload-Offset", String(job.bytesCommitted)),
                        ("Upload-Expires", httpDate(secondsSince1970: expires(job))),
                    ])
            }
        ) {
            try await create(http, identity: identity, owner: owner)
        }
    }

    private func create(_ http: HTTPRequest, identity: Identity, owner: String) async throws -> HTTPResponse {
        let settings = context.engine
        if http.headers["upload-defer-length"] != nil {
            return refuse(.validationFailed, "Upload-Defer-Length is not supported; send Upload-Length.")
        }
        guard let length = http.headers["upload-length"].flatMap(DecimalNumber.parse) else {
            return refuse(.validationFailed, "Upload-Length must be the upload's size in bytes.")
        }
        guard length <= settings.maxObjectSize else {
            return refuse(.payloadTooLarge, "Upload-Length is past Tus-Max-Size (\(settings.maxObjectSize)).")
        }
        guard let metadata = Self.metadata(http.headers["upload-metadata"] ?? "") else {
            return refuse(.validationFailed, "Upload-Metadata must be comma-separated `key base64` pairs.")
        }
        guard let name = metadata["key"] ?? metadata["filename"], !name.isEmpty else {
            return refuse(.validationFailed, "Upload-Metadata must name the object (`key` or `filename`).")
        }
        guard let level = AccessLevel(rawValue: metadata["accessLevel"] ?? "private") else {
            return refuse(.validationFailed, "accessLevel must be public, protected or private.")
        }
        let objectKey = try context.policy.granted(.write, level: level, key: name, identity: identity)
        let options = try Self.options(metadata, nameKey: metadata["key"] != nil ? "key" : "filename")
        let store = jobs.store, uploads = jobs.receiver, quota = context.limits.quota
        var made = Job.upload(owner: owner, objectKey: objectKey, size: length, options: options, settings: settings)
        if let raw = http.headers["upload-metadata"], !raw.isEmpty { made.source = .uploaded(tusMetadata: raw) }
        let pending = made
        guard pending.partSize <= settings.spoolCapacity else {
            return refuse(.payloadTooLarge, "An upload of this length needs parts larger than the gateway's spool budget.")
        }
        let job = try await Shield.run { try await store.insert(pending, quota: quota) }
        var headers = [("Location", "/v1/tus/\(job.id)"), ("Upload-Expires", httpDate(secondsSince1970: expires(job)))]
        // creation-with-upload: the first bytes ride along.
        if let type = http.headers["content-type"], type.lowercased().hasPrefix("application/offset+octet-stream") {
            let body = RequestBodyBytes(body: http.body)
            let outcome = try await Shield.run { try await uploads.receive(jobID: job.id, offset: 0, body: body) }
            if let offset = UploadAnswer.committed(after: outcome) { headers.append(("Upload-Offset", String(offset))) }
            // The upload exists (its Location is valid), but the bytes went past Upload-Length.
            if case .tooLarge = outcome {
                return refuse(.payloadTooLarge, "The body goes past Upload-Length (\(length) bytes).", headers)
            }
        }
        return answer(201, headers)
    }

    /// ASCII letters and digits only (Foundation's `.alphanumerics` holds every Unicode letter).
    static let asciiAlphanumerics = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

    /// `Upload-Metadata` keys the gateway reads itself; every other one is user metadata.
    static let attributeKeys: Set<String> = [
        "accessLevel", "filetype", "contentType", "cacheControl", "contentDisposition",
        "serverSideEncryption", "kmsKeyId",
    ]

    /// The job's options from `Upload-Metadata`: the object's attributes where named, every
    /// other key (but the one naming the object) as user metadata. A value that is not
    /// printable ASCII is kept percent-encoded (UTF-8), as header values must be ASCII; an
    /// empty one is left out (S3 keeps no empty metadata).
    static func options(_ metadata: [String: String], nameKey: String) throws(APIError) -> JobOptions {
        var options = JobOptions()
        let header = { (value: String?, field: String) throws(APIError) -> String? in
            guard let value, !value.isEmpty else { return nil }
            try HeaderRules.checkValue(value, field: field)
            return value
        }
        options.contentType = try header(metadata["filetype"] ?? metadata["contentType"], "filetype")
        options.cacheControl = try header(metadata["cacheControl"], "cacheControl")
        options.contentDisposition = try header(metadata["contentDisposition"], "contentDisposition")
        if let sse = try header(metadata["serverSideEncryption"], "serverSideEncryption") {
            guard sse == "AES256" || sse == "aws:kms" else { throw APIError.validation("serverSideEncryption must be AES256 or aws:kms.") }
            options.serverSideEncryption = sse
            if sse == "aws:kms" { options.kmsKeyId = try header(metadata["kmsKeyId"], "kmsKeyId") }
        }
        var user: [String: String] = [:]
        for (key, value) in metadata where key != nameKey && !attributeKeys.contains(key) && !value.isEmpty {
            user[key] =
                value.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) && !value.utf8.allSatisfy({ $0 == 0x20 })
                ? value : value.addingPercentEncoding(withAllowedCharacters: Self.asciiAlphanumerics) ?? ""
        }
        if !user.isEmpty {
            _ = try HeaderRules.metadataHeaders(user)
            options.metadata = Dictionary(uniqueKeysWithValues: user.map { ($0.key.lowercased(), $0.value) })
        }
        return options
    }

    /// `key base64value` pairs separated by commas (the value may be absent).
    static func metadata(_ header: String) -> [String: String]? {
        var out: [String: String] = [:]
        for pair in header.split(separator: ",") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
            guard let key = parts.first, !key.isEmpty else { continue }
            if parts.count == 2 {
                guard let data = Data(base64Encoded: String(parts[1])), let value = String(data: data, encoding: .utf8) else { return nil }
                out[String(key)] = value
            } else {
                out[String(key)] = ""
            }
        }
        return out
    }

    // MARK: core

    /// The caller's own upload job, or the answer that refuses it (404, or 410 once expired).
    private enum Lookup {
        case success(Job)
        case failure(HTTPResponse)
    }

    private func upload(_ http: HTTPRequest, id: String) async throws -> Lookup {
        switch try await resource.find(http, id: id) {
        case .found(let job): return .success(job)
        case .missing: return .failure(refuse(.notFound, "No such upload."))
        case .ended: return .failure(refuse(.gone, "The upload was terminated or has expired."))
        }
    }

    private func head(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        if let refusal = versionRefusal(http) { return refusal }
        let job: Job
        switch try await upload(http, id: id) {
        case .success(let found): job = await resource.settled(found)
        case .failure(let refusal): return refusal
        }
        var headers = [
            ("Upload-Offset", String(job.bytesCommitted)), ("Cache-Control", "no-store"),
            ("Upload-Expires", httpDate(secondsSince1970: expires(job))),
        ]
        if let length = job.bytesTotal { headers.append(("Upload-Length", String(length))) }
        if let metadata = job.source.tusMetadata { headers.append(("Upload-Metadata", metadata)) }
        return answer(200, headers)
    }

    private func patch(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        if let refusal = versionRefusal(http) { return refusal }
        guard http.headers["content-type"]?.lowercased().hasPrefix("application/offset+octet-stream") == true else {
            return refuse(.unsupportedMediaType, "A PATCH body must be application/offset+octet-stream.")
        }
        guard let offset = http.headers["upload-offset"].flatMap(DecimalNumber.parse) else {
            return refuse(.validationFailed, "Upload-Offset must be a non-negative integer.")
        }
        let job: Job
        switch try await upload(http, id: id) {
        case .success(let found): job = found
        case .failure(let refusal): return refusal
        }
        guard job.state != .paused else {
            return refuse(
                .jobPaused, "The upload is paused; resume its job, then send the rest.",
                [("Upload-Offset", String(job.bytesCommitted))])
        }
        guard offset == job.bytesCommitted else {
            return refuse(.offsetMismatch, "The upload is at \(job.bytesCommitted) bytes.", [("Upload-Offset", String(job.bytesCommitted))])
        }
        var checksum: UploadReceiver.Checksum?
        if let header = http.headers["upload-checksum"] {
            // Hashed as the chunk streams to the spool; nothing of it counts until it matches.
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let expected = Data(base64Encoded: String(parts[1])) else {
                return refuse(.validationFailed, "Upload-Checksum must be `algorithm base64digest`.")
            }
            switch parts[0].lowercased() {
            case "sha1": checksum = UploadReceiver.Checksum(algorithm: .sha1, expected: Array(expected))
            case "md5": checksum = UploadReceiver.Checksum(algorithm: .md5, expected: Array(expected))
            default: return refuse(.checksumAlgorithmUnsupported, "Tus-Checksum-Algorithm: sha1, md5.")
            }
        }
        let uploads = jobs.receiver, body = RequestBodyBytes(body: http.body), chosen = checksum
        let outcome = try await Shield.run { try await uploads.receive(jobID: job.id, offset: offset, body: body, checksum: chosen) }
        return try await UploadAnswer.response(to: outcome, in: .tus) { committed in
            answer(204, [("Upload-Offset", String(committed)), ("Upload-Expires", httpDate(secondsSince1970: expires(job)))])
        }
    }

    // MARK: termination

    private func terminate(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        if let refusal = versionRefusal(http) { return refusal }
        let job: Job
        switch try await upload(http, id: id) {
        case .success(let found): job = found
        case .failure(let refusal): return refusal
        }
        // As the jobs API cancels: a paused upload too; refused once its object is being written.
        switch try await resource.terminate(job) {
        case .completing: return refuse(.jobCompleting, APIError.jobCompleting.detail)
        case .completed: return refuse(.jobNotPending, "The upload is complete; delete the object instead.")
        case .terminated: return answer(204)
        }
    }
}
