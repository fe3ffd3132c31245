import Auth
import HTTPServer
import TransferEngine

/// Upload creation (draft -01 §3, -05 §4): the job first, its URL in a 104, then the body.
extension ResumableRoutes {
    func create(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        guard let owner = identity.id else { throw APIError.unauthorized }
        let query = try QueryParameters.read(http, known: ["accessLevel", "key"])
        let version: InteropVersion?
        if case .supported(let spoken) = InteropVersion.detect(http.headers) { version = spoken } else { version = nil }
        let complete = try creationCompletes(http.headers, version)
        guard http.headers["upload-offset"] == nil else {
            throw APIError.validation("A creation carries no Upload-Offset; PATCH the upload's URL to resume it.")
        }
        let size = try declaredSize(http, version, complete: complete)
        if let size, size > context.engine.maxObjectSize {
            throw APIError(.payloadTooLarge, "The upload is larger than the largest object, \(context.engine.maxObjectSize) bytes.")
        }
        guard let key = query["key"], !key.isEmpty else { throw APIError.validation("The query must name the object's key.") }
        guard let level = AccessLevel(rawValue: query["accessLevel"] ?? "private") else {
            throw APIError.validation("accessLevel must be public, protected or private.")
        }
        let objectKey = try context.policy.granted(.write, level: level, key: key, identity: identity)
        var options = JobOptions()
        for (field, value) in [("content-type", \JobOptions.contentType), ("content-disposition", \.contentDisposition)] {
            guard let given = http.headers[field], !given.isEmpty else { continue }
            try HeaderRules.checkValue(given, field: field)
            options[keyPath: value] = given
        }
        try await context.limits.admitCreation(owner)
        let settings = context.engine, store = jobs.store, quota = context.limits.quota
        let pending = Job.upload(owner: owner, objectKey: objectKey, size: size, options: options, settings: settings)
        guard pending.partSize <= settings.spoolCapacity else {
            throw APIError(.payloadTooLarge, "An upload of this length needs parts larger than one identity's share of the spool.")
        }
        let job = try await Shield.run { try await store.insert(pending, quota: quota) }
        let location = location(http, id: job.id)
        var informational: HTTPHeaders?
        if let version, context.settings.resumable104 {
            // Sent before any byte of the body is read: a client cut off from then on can resume.
            var fields = [version.field, ("Location", location)]
            if let limit = limit(version, job) { fields.append(limit) }
            informational = HTTPHeaders(fields.map { (name: $0.0, value: $0.1) })
        }
        return try await receive(
            http, job: job, offset: 0, complete: complete, version: version, location: location, informational: informational)
    }

    /// Whether the creation's content ends the upload. Without a version the gateway speaks,
    /// the request is an ordinary upload and must be whole (draft -05 §4.1: a client unsure of
    /// support "MUST NOT" say false).
    private func creationCompletes(_ headers: HTTPHeaders, _ version: InteropVersion?) throws(APIError) -> Bool {
        guard let version else {
            for field in ["upload-complete", "upload-incomplete"] where headers[field].map({ StructuredField.boolean($0) == nil }) ?? false
            {
                throw APIError.validation("\(field) must be ?0 or ?1.")
            }
            let incomplete =
                headers["upload-complete"].flatMap(StructuredField.boolean) == false
                || headers["upload-incomplete"].flatMap(StructuredField.boolean) == true
            if incomplete {
                throw APIError(
                    .interopVersionUnsupported,
                    "An upload sent over several requests needs Upload-Draft-Interop-Version \(InteropVersion.supported.map(String.init).joined(separator: ", "))."
                )
            }
            return true
        }
        switch version.completes(headers) {
        case .failure(let invalid): throw APIError.validation("\(invalid.name) must be ?0 or ?1.")
        case .success(nil): throw APIError.validation("A resumable creation says \(version.completenessField) (?0 or ?1).")
        case .success(let said?): return said
        }
    }

    /// The upload's length when known: `Upload-Length` (interop 6 on, and checked on an ordinary
    /// upload that sends it), or the content's length when the request is the whole upload; the
    /// two must agree (draft -05 §4: else 400).
    private func declaredSize(_ http: HTTPRequest, _ version: InteropVersion?, complete: Bool) throws(APIError) -> Int64? {
        var declared: Int64?
        if version?.knowsLengthAndLimit ?? true, let field = http.headers["upload-length"] {
            guard let length = StructuredField.integer(field) else {
                throw APIError.validation("Upload-Length must be a non-negative integer.")
            }
            declared = length
        }
        guard let content = http.body.expectedLength.map(Int64.init) else { return declared }
        if complete {
            if let declared, declared != content {
                throw APIError(.lengthMismatch, "Upload-Length (\(declared)) and the content's length (\(content)) differ.")
            }
            return content
        }
        if let declared, content > declared {
            throw APIError(.lengthMismatch, "The content (\(content) bytes) is longer than Upload-Length (\(declared)).")
        }
        return declared
    }
}
