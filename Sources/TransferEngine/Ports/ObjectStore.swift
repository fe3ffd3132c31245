/// The S3 operations the engine needs, no more (the S3 adapter implements them; tests use an
/// in-memory twin). Errors carry whether a retry can help.
public protocol ObjectStore: Sendable {
    /// HeadObject: size, ETag and the attributes the object was stored with.
    func properties(of key: String) async throws -> ObjectProperties
    /// One page under `prefix` after the key `after`: at most `limit` entries, and the key to
    /// list after for the next page when there is one. With a `delimiter`, the keys that have it
    /// past the prefix are rolled into `folders` (each the key up to and including its first
    /// delimiter past the prefix, once), counted among the entries; `next` is then the greater
    /// of the last object and the last folder.
    func list(prefix: String, after: String?, limit: Int, delimiter: String?) async throws -> ObjectPage
    /// With `checksum` `.crc32c` the upload is created with that algorithm: each part must be
    /// sent with `.crc32c` and completed with its recorded checksum.
    func createMultipartUpload(key: String, attributes: ObjectAttributesSpec, checksum: PartChecksum?) async throws -> String
    /// UploadPartCopy, pinned to the source's ETag when `ifMatch` is given (a source replaced
    /// meanwhile fails with `TransferError.sourceChanged`).
    func copyPart(
        key: String, uploadID: String, part: Int, sourceKey: String, range: ClosedRange<Int64>?,
        ifMatch: String?
    ) async throws -> String
    func listParts(key: String, uploadID: String) async throws -> [RecordedPart]
    /// Completes; with `condition`, only if it holds (else its `failure`, and the upload stays
    /// open for the caller to abort).
    func completeMultipartUpload(key: String, uploadID: String, parts: [RecordedPart], condition: WriteCondition?) async throws -> String
    func abortMultipartUpload(key: String, uploadID: String) async throws
    /// The ids of unfinished multipart uploads of exactly `key` begun at least `age` seconds
    /// ago: the store's record of when each began, against this process's clock (so a store
    /// whose clock runs more than `age` behind makes new uploads look old); an upload whose
    /// start is unknown counts as old.
    func openUploads(key: String, olderThan age: Double) async throws -> [String]
    /// CopyObject: with `attributes` nil the copy keeps the source's; else they replace them.
    func copyObject(
        from sourceKey: String, to key: String, attributes: ObjectAttributesSpec?, ifMatch: String?, condition: WriteCondition?
    ) async throws -> String
    /// Sends part `part`, checked by `checksum` (the upload's `PartChecksum`); returns it as it
    /// is to be recorded.
    func uploadPart(key: String, uploadID: String, part: Int, data: PartData, checksum: PartChecksum) async throws -> RecordedPart
    func putObject(key: String, data: PartData, attributes: ObjectAttributesSpec, condition: WriteCondition?) async throws -> String
    /// The bytes of `range` of `key` (pinned to `ifMatch`) written into `file` from `fileOffset`.
    func read(key: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile, at fileOffset: Int64) async throws
    /// The bytes of `range` of `key`, pinned to `ifMatch` (a changed object is
    /// `TransferError.sourceChanged`).
    func read(key: String, range: ClosedRange<Int64>, ifMatch: String?) async throws -> [UInt8]
    /// The same, received into `storage`'s memory where the store can (a reader of block after
    /// block hands back the last one: no new allocation, no pages to fault in). The caller
    /// keeps no other reference to `storage`. Stores that cannot need not implement it.
    func read(key: String, range: ClosedRange<Int64>, ifMatch: String?, reusing storage: consuming [UInt8]) async throws -> [UInt8]
    /// DeleteObject; with `ifMatch`, only while the object has that ETag (else
    /// `TransferError.preconditionFailed`, nothing deleted).
    func deleteObject(key: String, ifMatch: String?) async throws
    /// The whole-object checksum the store itself keeps for `key` (S3's `FULL_OBJECT` type,
    /// asked for with a HEAD), and the ETag it belongs to; nil when it keeps none, or only a
    /// checksum of part checksums. Stores that keep none need not implement it.
    func fullObjectChecksum(of key: String) async throws -> (checksum: ObjectChecksum, etag: String)?
}

extension ObjectStore {
    /// A new array each time.
    public func read(key: String, range: ClosedRange<Int64>, ifMatch: String?, reusing storage: consuming [UInt8]) async throws -> [UInt8] {
        try await read(key: key, range: range, ifMatch: ifMatch)
    }

    /// No checksum of the store's own.
    public func fullObjectChecksum(of key: String) async throws -> (checksum: ObjectChecksum, etag: String)? { nil }

    /// CompleteMultipartUpload, whatever the key holds.
    public func completeMultipartUpload(key: String, uploadID: String, parts: [RecordedPart]) async throws -> String {
        try await completeMultipartUpload(key: key, uploadID: uploadID, parts: parts, condition: nil)
    }

    /// CopyObject, whatever the destination holds.
    public func copyObject(
        from sourceKey: String, to key: String, attributes: ObjectAttributesSpec?, ifMatch: String?
    ) async throws
        -> String
    {
        try await copyObject(from: sourceKey, to: key, attributes: attributes, ifMatch: ifMatch, condition: nil)
    }

    /// PutObject, whatever the key holds.
    public func putObject(key: String, data: PartData, attributes: ObjectAttributesSpec) async throws -> String {
        try await putObject(key: key, data: data, attributes: attributes, condition: nil)
    }

    /// DeleteObject, whatever the object is.
    public func deleteObject(key: String) async throws {
        try await deleteObject(key: key, ifMatch: nil)
    }

    /// One page of the objects under `prefix`, with no folders.
    public func list(prefix: String, after: String?, limit: Int) async throws -> ObjectPage {
        try await list(prefix: prefix, after: after, limit: limit, delimiter: nil)
    }

    /// A multipart upload whose parts carry no declared checksum (a client's, a copy's).
    public func createMultipartUpload(key: String, attributes: ObjectAttributesSpec) async throws -> String {
        try await createMultipartUpload(key: key, attributes: attributes, checksum: nil)
    }
}

/// Object attributes a job sets (content type, metadata, …), independent of the S3 client.
public struct ObjectAttributesSpec: Sendable, Equatable {
    public var contentType: String?
    public var cacheControl: String?
    public var contentDisposition: String?
    public var serverSideEncryption: String?
    public var kmsKeyId: String?
    public var metadata: [String: String]

    public init(
        contentType: String? = nil, cacheControl: String? = nil, contentDisposition: String? = nil,
        serverSideEncryption: String? = nil, kmsKeyId: String? = nil, metadata: [String: String] = [:]
    ) {
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
        self.serverSideEncryption = serverSideEncryption
        self.kmsKeyId = kmsKeyId
        self.metadata = metadata
    }

    /// Sets no attribute at all.
    public var isEmpty: Bool { self == ObjectAttributesSpec() }

    /// These attributes where set, `base`'s elsewhere (a copy keeps what its options leave
    /// alone); metadata given replaces the source's as a whole, as S3's `REPLACE` does.
    public func over(_ base: ObjectAttributesSpec) -> ObjectAttributesSpec {
        ObjectAttributesSpec(
            contentType: contentType ?? base.contentType, cacheControl: cacheControl ?? base.cacheControl,
            contentDisposition: contentDisposition ?? base.contentDisposition,
            serverSideEncryption: serverSideEncryption ?? base.serverSideEncryption,
            kmsKeyId: serverSideEncryption == nil ? base.kmsKeyId : kmsKeyId,
            metadata: metadata.isEmpty ? base.metadata : metadata)
    }

    /// The type S3 stores when a writer names none is `binary/octet-stream`; the gateway's is
    /// `application/octet-stream`, the same for every way an object is made.
    public var withDefaultType: ObjectAttributesSpec {
        var copy = self
        if copy.contentType == nil { copy.contentType = "application/octet-stream" }
        return copy
    }
}

/// An object as HeadObject describes it.
public struct ObjectProperties: Sendable, Equatable {
    public var size: Int64
    public var etag: String
    /// RFC 9110 HTTP-date, as S3 sends it.
    public var lastModified: String?
    public var attributes: ObjectAttributesSpec

    public init(size: Int64, etag: String, lastModified: String?, attributes: ObjectAttributesSpec) {
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
        self.attributes = attributes
    }
}

/// One page of a listing: objects, folders (with a delimiter), and where the next page starts.
public struct ObjectPage: Sendable, Equatable {
    public var objects: [ObjectSummary]
    public var folders: [String]
    public var next: String?

    public init(objects: [ObjectSummary], folders: [String] = [], next: String?) {
        self.objects = objects
        self.folders = folders
        self.next = next
    }
}

/// An object as a listing names it.
public struct ObjectSummary: Sendable, Equatable {
    public var key: String
    public var size: Int64
    public var etag: String
    /// RFC 3339, as S3 lists it.
    public var lastModified: String

    public init(key: String, size: Int64, etag: String, lastModified: String) {
        self.key = key
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
    }
}

extension ObjectStore {
    /// HeadObject's size and ETag.
    public func size(of key: String) async throws -> (size: Int64, etag: String) {
        let found = try await properties(of: key)
        return (found.size, found.etag)
    }

    /// Aborts, taking an upload S3 no longer has (aborted or completed by someone else) as
    /// already done.
    public func abortIfOpen(key: String, uploadID: String) async throws {
        do {
            try await abortMultipartUpload(key: key, uploadID: uploadID)
        } catch let error as TransferError where error.code == .noSuchUpload {
            return
        }
    }
}
