import Auth
import HTTPServer
import TransferEngine

/// `/v1/objects`: what a screen that lists files needs (openapi.yaml, tag `objects`): a page of
/// the objects under a level (and a prefix; with `delimiter=/`, one folder level: `folders`
/// beside `objects`), one object's properties, and deleting one, each under the access rules of
/// the level (reads as `get`, deletes as `put`).
struct ObjectRoutes: Sendable {
    let context: RouteContext
    let jobs: JobPorts

    func register(in router: inout Router<GatewayRoute>) {
        router.add("GET", "/v1/objects") { try await list($0.http) }
        router.add("GET", "/v1/objects/properties") { try await properties($0.http) }
        router.add("DELETE", "/v1/objects") { try await delete($0.http) }
        registerBulk(in: &router)
    }

    private static func level(_ query: [String: String]) throws(APIError) -> AccessLevel {
        guard let raw = query["accessLevel"] else { throw APIError.validation("accessLevel is required.") }
        guard let level = AccessLevel(rawValue: raw) else { throw APIError.validation("accessLevel must be public, protected or private.") }
        return level
    }

    private func list(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http, guestAllowed: true)
        let query = try QueryParameters.read(http, known: ["accessLevel", "prefix", "targetIdentityId", "limit", "cursor", "delimiter"])
        let delimiter = query["delimiter"]
        if let delimiter, delimiter != "/" { throw APIError.validation("delimiter must be /.") }
        let base = try context.policy.grantedPrefix(
            .read, level: try Self.level(query), identity: identity, target: query["targetIdentityId"])
        let prefix = query["prefix"] ?? ""
        guard prefix.utf8.count <= 1024, prefix.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }),
            !UnicodeNoncharacters.occur(in: prefix)
        else {
            throw APIError(.invalidKey, "prefix must be at most 1024 bytes with no control character and no Unicode noncharacter.")
        }
        let limit = try PageLimit.read(query, fallback: 100, maximum: 1000)
        // The cursor is the last key of the previous page, in the caller's key space: listing
        // starts after it, still under the level and prefix, so no cursor reaches further.
        var after: String?
        if let cursor = query["cursor"] {
            guard cursor.utf8.starts(with: prefix.utf8), cursor.utf8.count <= 1024 else {
                throw APIError.validation("cursor is not one this API gave.")
            }
            // A folder was the page's last entry: the next page starts past every key in it
            // (U+10FFFF sorts after any other character, and no key may hold it).
            let isFolder = delimiter != nil && cursor.hasSuffix("/") && cursor.utf8.count > prefix.utf8.count
            after = base + cursor + (isFolder ? "\u{10FFFF}" : "")
        }
        let objects = jobs.objects
        let page: ObjectPage
        do {
            page = try await objects.list(prefix: base + prefix, after: after, limit: limit, delimiter: delimiter)
        } catch let error as TransferError {
            throw APIError(.storageError, "S3 did not list the objects (\(error.code.rawValue)).")
        }
        if let next = page.next, !Self.advances(next, after: after.map { $0.hasSuffix("\u{10FFFF}") ? String($0.dropLast()) : $0 }) {
            // Following this cursor would answer the same page again, forever.
            throw APIError(.storageError, "S3 answered a page that does not advance; the listing stopped.")
        }
        var items: [UInt8] = [UInt8(ascii: "[")]
        var written = 0
        // Bytes, not Characters: a key may begin with a combining mark that would merge with the
        // prefix's last "/" into one Character.
        for object in page.objects {
            guard let key = Self.within(base, object.key) else { continue }
            var item = JSONText()
            item.begin()
            item.field("key", .string(key))
            item.field("objectKey", .string(object.key))
            item.field("size", .int(Int(object.size)))
            item.field("etag", .string(object.etag))
            item.field("lastModified", .string(Timestamp.rfc3339(normalizing: object.lastModified) ?? object.lastModified))
            item.end()
            if written > 0 { items.append(UInt8(ascii: ",")) }
            items += item.bytes
            written += 1
        }
        items.append(UInt8(ascii: "]"))
        var text = JSONText()
        text.begin(capacity: items.count + 256)
        text.rawField("objects", items)
        if delimiter != nil {
            var folders: [UInt8] = [UInt8(ascii: "[")]
            for folder in page.folders.compactMap({ Self.within(base, $0) }) {
                if folders.count > 1 { folders.append(UInt8(ascii: ",")) }
                var quoted = JSONText()
                quoted.appendString(folder)
                folders += quoted.bytes
            }
            folders.append(UInt8(ascii: "]"))
            text.rawField("folders", folders)
        }
        if let next = page.next, let cursor = Self.within(base, next) {
            text.field("nextCursor", .string(cursor))
        } else {
            text.rawField("nextCursor", Array("null".utf8))
        }
        text.end()
        return Responses.json(200, bytes: text.bytes)
    }

    private func properties(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http, guestAllowed: true)
        let query = try QueryParameters.read(http, known: ["accessLevel", "key", "targetIdentityId"])
        guard let key = query["key"] else { throw APIError.validation("key is required.") }
        let objectKey = try context.policy.granted(
            .read, level: try Self.level(query), key: key, identity: identity,
            target: query["targetIdentityId"])
        let found = try await Self.found { try await jobs.objects.properties(of: objectKey) }
        let attributes = found.attributes
        var text = JSONText()
        text.begin()
        text.field("objectKey", .string(objectKey))
        text.field("size", .int(Int(found.size)))
        text.field("etag", .string(found.etag))
        Self.optional(&text, "contentType", attributes.contentType)
        Self.optional(&text, "lastModified", found.lastModified.flatMap { Timestamp.rfc3339(httpDate: $0) })
        var metadata = JSONText()
        metadata.begin()
        for (name, value) in attributes.metadata.sorted(by: { $0.key < $1.key }) { metadata.field(name, .string(value)) }
        metadata.end()
        text.rawField("metadata", metadata.bytes)
        Self.optional(&text, "cacheControl", attributes.cacheControl)
        Self.optional(&text, "contentDisposition", attributes.contentDisposition)
        Self.optional(&text, "serverSideEncryption", attributes.serverSideEncryption)
        // Known for objects the gateway wrote (only while S3 still has that version), or kept by
        // S3 itself for the whole object.
        var checksum = await ChecksumFields.lookup(jobs, key: objectKey, etag: found.etag)
        if checksum == nil { checksum = await ChecksumFields.stores(jobs, key: objectKey, etag: found.etag) }
        text.rawField("checksum", ChecksumFields.json(checksum))
        text.end()
        var response = Responses.json(200, bytes: text.bytes)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    private func delete(_ http: HTTPRequest) async throws -> HTTPResponse {
        let identity = try context.authenticator.identity(of: http)
        let query = try QueryParameters.read(http, known: ["accessLevel", "key", "targetIdentityId", "ifMatch"])
        guard let key = query["key"] else { throw APIError.validation("key is required.") }
        let objectKey = try context.policy.granted(
            .write, level: try Self.level(query), key: key, identity: identity,
            target: query["targetIdentityId"])
        let ifMatch = try query["ifMatch"].map { value throws(APIError) in try SafeWrite.etag(value) }
        let level = try Self.level(query)
        let objects = jobs.objects
        // S3 answers a delete of a missing key as done; the API says 404, so it looks first.
        try await Shield.run {
            _ = try await Self.found { try await objects.size(of: objectKey) }
            do {
                try await objects.deleteObject(key: objectKey, ifMatch: ifMatch)
            } catch let error as TransferError where error.code == .preconditionFailed {
                throw APIError(.preconditionFailed, "The object is no longer the one with that ETag; nothing was deleted.")
            }
        }
        let place = Self.place(level, key: key, target: query["targetIdentityId"], identity: identity, objectKey: objectKey)
        await announce("object.deleted", ObjectChange(source: place), caller: identity)
        return HTTPResponse(status: 204)
    }

    /// Whether a page's `next` key sorts after the key it listed after, as S3 sorts (UTF-8
    /// bytes): the next page must start past where this one did.
    static func advances(_ next: String, after: String?) -> Bool {
        guard let after else { return true }
        return after.utf8.lexicographicallyPrecedes(next.utf8)
    }

    /// `key` without the level's prefix `base`, compared and cut as UTF-8 bytes; nil when it is
    /// not under it.
    static func within(_ base: String, _ key: String) -> String? {
        guard key.utf8.starts(with: base.utf8) else { return nil }
        return String(decoding: key.utf8.dropFirst(base.utf8.count), as: UTF8.self)
    }

    /// The store's answer, a missing object being 404.
    static func found<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as TransferError where error.code == .notFound {
            throw APIError(.notFound, "No such object.")
        }
    }

    private static func optional(_ text: inout JSONText, _ key: String, _ value: String?) {
        if let value { text.field(key, .string(value)) } else { text.rawField(key, Array("null".utf8)) }
    }
}
