import Auth
import Foundation
import HTTPServer
import TransferEngine

/// `/v1/jobs`: server-side transfers (openapi.yaml, tag `jobs`): `copy`, `import` and
/// `download` run on the worker; `upload` jobs take their bytes at `/v1/jobs/{id}/data`.
struct JobRoutes: Sendable {
    let context: RouteContext
    let jobs: JobPorts
    /// Signs `dataUrl`s and `eventsUrl`s (absent without a link secret: jobs show none).
    let links: DataLinks?

    init(context: RouteContext, jobs: JobPorts) {
        self.context = context
        self.jobs = jobs
        links = context.settings.linkSecret.map { DataLinks(secret: $0, now: context.now) }
    }

    func register(in router: inout Router<GatewayRoute>) {
        router.add("POST", "/v1/jobs") { try await create($0.http) }
        router.add("GET", "/v1/jobs") { try await list($0.http) }
        router.add("GET", "/v1/jobs/{id}") { try await show($0.http, id: $0.parameters["id"] ?? "") }
        router.add("POST", "/v1/jobs/{id}/pause") { try await change($0.http, id: $0.parameters["id"] ?? "", action: .pause) }
        router.add("POST", "/v1/jobs/{id}/resume") { try await change($0.http, id: $0.parameters["id"] ?? "", action: .resume) }
        router.add("POST", "/v1/jobs/{id}/cancel") { try await change($0.http, id: $0.parameters["id"] ?? "", action: .cancel) }
        router.add("POST", "/v1/jobs/{id}/retry") { try await retry($0.http, id: $0.parameters["id"] ?? "") }
        router.add("GET", "/v1/jobs/{id}/data") { try await data($0.http, id: $0.parameters["id"] ?? "") }
        router.add("GET", "/v1/jobs/{id}/events") { try await events($0.http, id: $0.parameters["id"] ?? "") }
        router.add("PUT", "/v1/jobs/{id}/data") { try await receive($0.http, id: $0.parameters["id"] ?? "") }
        router.add("PATCH", "/v1/jobs/{id}/data") { try await receive($0.http, id: $0.parameters["id"] ?? "") }
    }

    // MARK: create

    private func create(_ http: HTTPRequest) async throws -> HTTPResponse {
        // The token first, then the rate: nothing of the body is read for a caller refused anyway.
        let identity = try context.authenticator.identity(of: http)
        guard let owner = identity.id else { throw APIError.unauthorized }
        try await context.limits.admitCreation(owner)
        let fields = try await Responses.fields(from: http, known: Self.knownFieldNames)
        return try await jobs.idempotency.run(
            http, owner: owner, scope: "jobs", request: fields.canonical,
            replay: { first in
                // The job as it is now, with the first answer's status and the same id.
                guard let id = first.location?.split(separator: "/").last, let job = try await jobs.store.job(id: String(id)),
                    AccessPolicy.same(job.owner, owner)
                else { throw APIError.notFound }
                var response = Responses.json(first.status, bytes: json(job, http))
                response.headers.add("Location", "/v1/jobs/\(job.id)")
                response.headers.add("ETag", Self.etag(job))
                return response
            }
        ) {
            try await create(fields, http, identity: identity, owner: owner)
        }
    }

    private func create(_ fields: JSONFields, _ http: HTTPRequest, identity: Identity, owner: String) async throws -> HTTPResponse {
        let settings = context.engine, sourceCheck = jobs.sourceCheck
        let type = try fields.requiredString("type")
        guard let kind = Job.Kind(rawValue: type) else { throw APIError.validation("type must be upload, import, copy or download.") }
        if let unused = Self.knownFields.subtracting(Self.fields(of: kind)).sorted().first(where: fields.has) {
            throw APIError.optionNotSupported(unused, type)
        }
        let options = try Self.options(fields, maxConcurrency: settings.maxConcurrency)
        if let partSize = options.partSize, partSize > settings.spoolCapacity {
            throw APIError.validation(
                "partSize may be at most one identity's share of the spool (GATEWAY_USER_SPOOL_SHARE of GATEWAY_SPOOL_BUDGET), \(settings.spoolCapacity) bytes."
            )
        }
        let objectKey: String, source: JobSource
        switch kind {
        case .copy:
            source = .object(ObjectSource(key: try object(fields, "source", mode: .read, identity: identity)))
            objectKey = try object(fields, "destination", mode: .write, identity: identity)
        case .download:
            return try await created(try await pinnedDownload(fields, owner: owner, identity: identity), http)
        case .import:
            let url = try fields.requiredString("sourceUrl")
            let lower = url.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), url.utf8.count <= 8192,
                url.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E })
            else {
                throw APIError.validation("sourceUrl must be an http or https URL of at most 8192 printable ASCII characters.")
            }
            objectKey = try key(fields, mode: .write, identity: identity)
            if let refusal = await sourceCheck?.refusal(of: url) { throw APIError(.forbiddenAddress, refusal.detail) }
            source = .url(url)
        case .upload:
            let size = try fields.integer("size")
            if let size, !(0...settings.maxObjectSize).contains(size) {
                throw APIError.validation("size must be from 0 to \(settings.maxObjectSize) bytes.")
            }
            let job = Job.upload(
                owner: owner, objectKey: try key(fields, mode: .write, identity: identity),
                size: size, options: options, settings: settings)
            guard job.partSize <= settings.spoolCapacity else {
                throw APIError.validation(
                    "An upload of this size needs parts of \(job.partSize) bytes, more than one identity's share of the spool.")
            }
            return try await created(job, http)
        }
        return try await created(
            Job(
                id: UUID().uuidString.lowercased(), owner: owner, kind: kind, state: .queued,
                objectKey: objectKey, source: source, options: options, bytesTotal: nil,
                partSize: options.partSize ?? settings.partSize), http)
    }

    /// A download pins the object as it is now (size, ETag, content type) and is complete at
    /// once: any instance then streams it from S3, checked against the pinned ETag.
    private func pinnedDownload(_ fields: JSONFields, owner: String, identity: Identity) async throws -> Job {
        let settings = context.engine
        let key = try object(fields, "source", mode: .read, identity: identity)
        let filename = try fields.string("filename")
        if let filename {
            guard (1...255).contains(filename.utf8.count),
                !filename.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }),
                !filename.contains("/"), !filename.contains("\\")
            else {
                throw APIError.validation("filename must be 1–255 bytes with no control character, / or \\.")
            }
        }
        let found = try await ObjectRoutes.found { try await jobs.objects.properties(of: key) }
        guard found.size >= 0, found.etag.utf8.count > 2 else {
            throw APIError(.storageError, "S3 described the object without a size or ETag.")
        }
        let source = ObjectSource(key: key, contentType: found.attributes.contentType, filename: filename)
        var job = Job(
            id: UUID().uuidString.lowercased(), owner: owner, kind: .download, state: .completed, objectKey: key,
            source: .object(source), bytesTotal: found.size, partSize: settings.partSize)
        job.etag = found.etag
        job.sourceETag = found.etag
        job.checksum = await ChecksumFields.lookup(jobs, key: key, etag: found.etag)
        job.bytesTransferred = found.size
        job.bytesCommitted = found.size
        return job
    }

    /// Stores `job` (within the owner's quota) and answers 201 with it.
    private func created(_ job: Job, _ http: HTTPRequest) async throws -> HTTPResponse {
        let store = jobs.store, quota = context.limits.quota
        let created = try await Shield.run { try await store.insert(job, quota: quota) }
        var response = Responses.json(201, bytes: json(created, http))
        response.headers.add("Location", "/v1/jobs/\(job.id)")
        response.headers.add("ETag", Self.etag(created))
        return response
    }

    /// Every member a job body may have, and those each type uses (any other is 400
    /// `option_not_supported`: nothing is accepted and then ignored).
    static let optionFields: Set<String> = AttributeFields.names.union([
        "partSize", "concurrency", "retryLimit", "timeoutSeconds", "stallTimeoutSeconds",
        "bandwidthLimit", "preventOverwrite", "ifMatch",
    ])
    static let knownFields: Set<String> = optionFields.union([
        "type", "accessLevel", "key", "targetIdentityId", "size", "sourceUrl",
        "source", "destination", "filename",
    ])
    static let knownFieldNames = FieldNames(knownFields)
    static func fields(of kind: Job.Kind) -> Set<String> {
        switch kind {
        // An upload job moves the bytes its client sends, when it sends them: nothing of its own can stall.
        case .upload:
            return optionFields.subtracting(["stallTimeoutSeconds"]).union(["type", "accessLevel", "key", "targetIdentityId", "size"])
        case .import: return optionFields.union(["type", "accessLevel", "key", "targetIdentityId", "sourceUrl"])
        case .copy: return optionFields.union(["type", "source", "destination"])
        case .download: return ["type", "source", "filename"]
        }
    }

    /// `{accessLevel, key, targetIdentityId?}` → the object key, access checked.
    private func object(_ fields: JSONFields, _ name: String, mode: AccessMode, identity: Identity) throws(APIError) -> String {
        let inner = try fields.object(name)
        try inner.only(["accessLevel", "key", "targetIdentityId"], in: name + ".")
        return try key(inner, mode: mode, identity: identity)
    }

    /// `accessLevel`, `key` and `targetIdentityId` of `inner` → the object key, access checked
    /// (on a write, `targetIdentityId` may name only the caller: anyone else is 403).
    private func key(_ inner: JSONFields, mode: AccessMode, identity: Identity) throws(APIError) -> String {
        let level = try inner.accessLevel("accessLevel")
        let target = try inner.string("targetIdentityId")
        return try context.policy.granted(mode, level: level, key: try inner.requiredString("key"), identity: identity, target: target)
    }

    static func options(_ fields: JSONFields, maxConcurrency: Int) throws(APIError) -> JobOptions {
        var options = JobOptions()
        if let partSize = try fields.integer("partSize") {
            guard (PartPlan.minimumPartSize...PartPlan.maximumPartSize).contains(partSize) else {
                throw APIError.validation("partSize must be from 5 MiB to 5 GiB.")
            }
            options.partSize = partSize
        }
        if let concurrency = try fields.integer("concurrency") {
            guard (1...Int64(maxConcurrency)).contains(concurrency) else {
                throw APIError.validation("concurrency must be from 1 to \(maxConcurrency).")
            }
            options.concurrency = Int(concurrency)
        }
        if let retries = try fields.integer("retryLimit") {
            guard (0...100).contains(retries) else { throw APIError.validation("retryLimit must be from 0 to 100.") }
            options.retryLimit = Int(retries)
        }
        if let timeout = try fields.integer("timeoutSeconds") {
            guard (1...604_800).contains(timeout) else { throw APIError.validation("timeoutSeconds must be from 1 to 604800.") }
            options.timeoutSeconds = Int(timeout)
        }
        if let stall = try fields.integer("stallTimeoutSeconds") {
            guard (1...86_400).contains(stall) else { throw APIError.validation("stallTimeoutSeconds must be from 1 to 86400.") }
            options.stallTimeoutSeconds = Int(stall)
        }
        if let limit = try fields.integer("bandwidthLimit") {
            guard limit >= 1 else { throw APIError.validation("bandwidthLimit must be a positive number of bytes per second.") }
            options.bandwidthLimit = limit
        }
        // The final write never clobbers: the key must be free, or still the version named.
        if try fields.bool("preventOverwrite") == true { options.preventOverwrite = true }
        options.ifMatch = try fields.string("ifMatch").map { value throws(APIError) in try SafeWrite.etag(value) }
        if options.preventOverwrite == true && options.ifMatch != nil {
            throw APIError.validation("preventOverwrite and ifMatch exclude each other.")
        }
        let attributes = try AttributeFields.read(fields)
        options.contentType = attributes.contentType
        options.cacheControl = attributes.cacheControl
        options.contentDisposition = attributes.contentDisposition
        options.serverSideEncryption = attributes.serverSideEncryption
        options.kmsKeyId = attributes.kmsKeyId
        options.metadata = attributes.metadata.isEmpty && !fields.has("metadata") ? nil : attributes.metadata
        return options
    }

    // MARK: read

    /// The job, if the caller may see it (its owner, or an admin); 404 otherwise.
    func visibleJob(_ http: HTTPRequest, id: String) async throws -> (Job, Identity) {
        try await OwnedResource.find(
            http, id: id, authenticator: context.authenticator, adminMayRead: true,
            load: { try await jobs.store.job(id: $0) }, owner: \.owner)
    }

    private func show(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        var (job, identity) = try await visibleJob(http, id: id)
        let known = http.headers["if-none-match"]
        // ?wait=N (N ≤ 60): hold the answer until the job changes from what the client has.
        if let wait = try QueryParameters.read(http)["wait"] {
            guard let seconds = DecimalNumber.parse(wait).map(Int.init), (0...60).contains(seconds) else {
                throw APIError.validation("wait must be from 0 to 60 seconds.")
            }
            let baseline = known ?? Self.etag(job)
            if seconds > 0 && Self.etag(job) == baseline && !job.state.isFinal {
                job = try await context.limits.holdingWait(identity.id ?? "") {
                    try await waitForChange(of: job, from: baseline, until: ContinuousClock.now + .seconds(seconds), http: http)
                }
            }
        }
        if let known, known == Self.etag(job) {
            return HTTPResponse(status: 304, headers: HTTPHeaders([("ETag", Self.etag(job))]))
        }
        var response = Responses.json(200, bytes: json(job, http))
        response.headers.add("ETag", Self.etag(job))
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    /// The job once its ETag differs from `baseline` (or it ended), or as it is at `deadline` or
    /// at shutdown. Woken by the change itself (`JobChanges`), on whichever instance it happened;
    /// a client that hangs up cancels the wait at once.
    func waitForChange(
        of job: Job, from baseline: String, until deadline: ContinuousClock.Instant,
        http: HTTPRequest
    ) async throws -> Job {
        var job = job
        let store = jobs.store, changes = jobs.changes
        while Self.etag(job) == baseline && !job.state.isFinal && !http.serverIsShuttingDown {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            // The ticket first, then the read: a change in between has marked the ticket already.
            let ticket = changes.ticket(for: job.id)
            job = try await store.job(id: job.id) ?? job
            if Self.etag(job) != baseline || job.state.isFinal { break }
            // Without the listener (the database was away) changes may go unheard: look again soon.
            _ = await changes.wait(ticket, for: job.id, timeout: changes.isLive ? left : min(left, .seconds(2)))
            try Task.checkCancellation()
            job = try await store.job(id: job.id) ?? job
        }
        return job
    }

    private func list(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        guard let owner = identity.id else { throw APIError.unauthorized }
        let query = try QueryParameters.read(http)
        var state: Job.State?
        if let raw = query["state"] {
            guard let parsed = Job.State(rawValue: raw) else { throw APIError.validation("state is not a job state.") }
            state = parsed
        }
        var kind: Job.Kind?
        if let raw = query["type"] {
            guard let parsed = Job.Kind(rawValue: raw) else { throw APIError.validation("type must be upload, import, copy or download.") }
            kind = parsed
        }
        let limit = try PageLimit.read(query, fallback: 20, maximum: 100)
        var cursor: String?
        if let raw = query["cursor"] {
            // A cursor is the last job of a page this identity was given: another's job is not one.
            guard UUID(uuidString: raw) != nil, let mark = try await jobs.store.job(id: raw.lowercased()),
                AccessPolicy.same(mark.owner, owner)
            else {
                throw APIError.validation("cursor is not one this API gave.")
            }
            cursor = mark.id
        }
        let listed = try await jobs.store.list(owner: owner, state: state, kind: kind, limit: limit, after: cursor)
        var text = JSONText()
        text.begin()
        text.rawField("jobs", Array("[".utf8) + Array(listed.map { json($0, http) }.joined(separator: Array(",".utf8))) + Array("]".utf8))
        if listed.count == limit, let last = listed.last {
            text.field("nextCursor", .string(last.id))
        } else {
            text.rawField("nextCursor", Array("null".utf8))
        }
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    // MARK: pause, resume, cancel

    private func change(_ http: HTTPRequest, id: String, action: JobLifecycle.Action) async throws -> HTTPResponse {
        let (visible, identity) = try await visibleJob(http, id: id)
        guard let id = identity.id, AccessPolicy.same(visible.owner, id) else { throw APIError.forbidden }
        let job: Job
        switch action {
        case .cancel:
            // The engine's one cancel (tus termination's too); its cleanup runs to its end even if
            // the client hangs up.
            let cancellation = jobs.cancellation
            switch try await Shield.run({ try await cancellation.cancel(visible) }) {
            case .canceled(let after), .unchanged(let after): job = after
            case .completing: throw APIError.jobCompleting
            case .notFound: throw APIError.notFound
            }
        default:
            // An upload resumed waits for its bytes again (`pending`); the worker claims only the others.
            let transition = action == .resume ? JobLifecycle.resume(visible.kind) : action
            guard let after = try await jobs.store.transition(id: visible.id, transition) else { throw APIError.notFound }
            if after.completing, JobLifecycle.refusedWhileCompleting(action), after.state != JobLifecycle.target(of: action),
                !after.state.isFinal
            {
                throw APIError.jobCompleting
            }
            job = after
        }
        var response = Responses.json(200, bytes: json(job, http))
        response.headers.add("ETag", Self.etag(job))
        return response
    }
}
