import Auth
import HTTPServer
import TransferEngine

/// `POST /v1/objects/delete` (up to 1,000 keys of one level at once) and `POST /v1/objects/move`
/// (one object to another key or level: a copy pinned to the source's ETag, then the source
/// deleted), for a file-browser screen. Each under the access rules: a delete and a move's source
/// need `put` on their level, a move's destination too.
extension ObjectRoutes {
    /// Keys one bulk delete takes (S3's DeleteObjects takes as many).
    static let keysPerDelete = 1000
    /// Deletes sent to S3 at once by one bulk delete.
    static let deletesInFlight = 8
    /// The largest object a move copies in one request (S3's CopyObject); larger ones go
    /// through a copy job.
    static let largestMove: Int64 = 5 << 30

    func registerBulk(in router: inout Router<GatewayRoute>) {
        router.add("POST", "/v1/objects/delete") { try await deleteMany($0.http) }
        router.add("POST", "/v1/objects/move") { try await move($0.http) }
    }

    /// `{accessLevel, keys, targetIdentityId?}` → `{deleted: [key], errors: [{key, code, detail}]}`.
    /// A key that names no object is deleted already, as S3's own bulk delete says; a key the
    /// rules refuse is an error of its own, not the request's.
    private func deleteMany(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        let fields = try await Responses.fields(from: http, known: ["accessLevel", "keys", "targetIdentityId"])
        let level = try fields.accessLevel("accessLevel")
        let target = try fields.string("targetIdentityId")
        // The level and target are the request's: refused (a bad or another's target), the whole
        // request is, not each key.
        _ = try context.policy.grantedPrefix(.write, level: level, identity: identity, target: target)
        guard let values = try fields.array("keys"), (1...Self.keysPerDelete).contains(values.count) else {
            throw APIError.validation("keys must list 1 to \(Self.keysPerDelete) keys.")
        }
        var granted: [(key: String, objectKey: String)] = []
        var errors: [(key: String, code: String, detail: String)] = []
        var seen = Set<String>()
        for value in values {
            guard case .string(let key) = value else { throw APIError.validation("keys must be strings.") }
            guard seen.insert(key).inserted else { continue }
            do {
                granted.append((key, try context.policy.granted(.write, level: level, key: key, identity: identity, target: target)))
            } catch {
                if error.code == .forbidden { throw error }
                errors.append((key, error.code.rawValue, error.detail))
            }
        }
        let objects = jobs.objects
        let targets = granted.map(\.objectKey)
        let outcomes = try await Shield.run { () -> [(Int, String?)] in
            try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                var next = 0
                var outcomes: [(Int, String?)] = []
                func start(_ index: Int) {
                    let objectKey = targets[index]
                    group.addTask {
                        do {
                            try await objects.deleteObject(key: objectKey)
                            return (index, nil)
                        } catch let error as TransferError where error.code == .notFound {
                            return (index, nil)
                        } catch {
                            return (index, "storage_error")
                        }
                    }
                }
                while next < min(Self.deletesInFlight, targets.count) {
                    start(next)
                    next += 1
                }
                while let outcome = try await group.next() {
                    outcomes.append(outcome)
                    if next < targets.count {
                        start(next)
                        next += 1
                    }
                }
                return outcomes.sorted { $0.0 < $1.0 }
            }
        }
        var deleted: [UInt8] = [UInt8(ascii: "[")]
        for (index, failure) in outcomes {
            if let failure {
                errors.append((granted[index].key, failure, "S3 did not delete it; try again."))
                continue
            }
            if deleted.count > 1 { deleted.append(UInt8(ascii: ",")) }
            let (key, objectKey) = granted[index]
            let place = Self.place(level, key: key, target: target, identity: identity, objectKey: objectKey)
            await announce("object.deleted", ObjectChange(source: place), caller: identity)
            var quoted = JSONText()
            quoted.appendString(granted[index].key)
            deleted += quoted.bytes
        }
        deleted.append(UInt8(ascii: "]"))
        var failed: [UInt8] = [UInt8(ascii: "[")]
        for (n, error) in errors.enumerated() {
            if n > 0 { failed.append(UInt8(ascii: ",")) }
            var item = JSONText()
            item.begin()
            item.field("key", .string(error.key))
            item.field("code", .string(error.code))
            item.field("detail", .string(error.detail))
            item.end()
            failed += item.bytes
        }
        failed.append(UInt8(ascii: "]"))
        var text = JSONText()
        text.begin(capacity: deleted.count + failed.count + 64)
        text.rawField("deleted", deleted)
        text.rawField("errors", failed)
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    /// `{source: {accessLevel, key, targetIdentityId?}, destination: {accessLevel, key}}` →
    /// the moved object (`objectKey`, `size`, `etag`). The copy is pinned to the source's ETag,
    /// so a source replaced meanwhile is 412 `source_changed` and nothing is deleted; the source
    /// goes only once the copy is there.
    private func move(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        let fields = try await Responses.fields(from: http, known: ["source", "destination"])
        let source = try fields.object("source")
        try source.only(["accessLevel", "key", "targetIdentityId"], in: "source.")
        let destination = try fields.object("destination")
        try destination.only(["accessLevel", "key", "targetIdentityId"], in: "destination.")
        // Moving takes the object away: its level's write rules, not only its read rules.
        let (fromLevel, fromKey, fromTarget) = (
            try source.accessLevel("accessLevel"), try source.requiredString("key"), try source.string("targetIdentityId")
        )
        let (toLevel, toKey, toTarget) = (
            try destination.accessLevel("accessLevel"), try destination.requiredString("key"),
            try destination.string("targetIdentityId")
        )
        let from = try context.policy.granted(.write, level: fromLevel, key: fromKey, identity: identity, target: fromTarget)
        let to = try context.policy.granted(.write, level: toLevel, key: toKey, identity: identity, target: toTarget)
        let objects = jobs.objects
        let found = try await Self.found { try await objects.properties(of: from) }
        // A move onto itself is done already.
        if from == to { return Self.moved(to, size: found.size, etag: found.etag) }
        guard found.size <= Self.largestMove else {
            throw APIError(
                .validationFailed, "The object is larger than 5 GiB: move it with a copy job, then delete the source.")
        }
        let etag = try await Shield.run { () -> String in
            let etag: String
            do {
                etag = try await objects.copyObject(from: from, to: to, attributes: nil, ifMatch: found.etag)
            } catch let error as TransferError
                where error.code == .preconditionFailed || error.code == .notFound || error.code == .sourceChanged
            {
                throw APIError.sourceChanged
            }
            try await objects.deleteObject(key: from)
            return etag
        }
        let change = ObjectChange(
            source: Self.place(fromLevel, key: fromKey, target: fromTarget, identity: identity, objectKey: from),
            destination: Self.place(toLevel, key: toKey, target: toTarget, identity: identity, objectKey: to), size: found.size,
            etag: etag)
        await announce("object.moved", change, caller: identity)
        return Self.moved(to, size: found.size, etag: etag)
    }

    /// `{objectKey, size, etag}` of a moved object.
    private static func moved(_ objectKey: String, size: Int64, etag: String) -> HTTPResponse {
        var text = JSONText()
        text.begin()
        text.field("objectKey", .string(objectKey))
        text.field("size", .int(Int(size)))
        text.field("etag", .string(etag))
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }
}
