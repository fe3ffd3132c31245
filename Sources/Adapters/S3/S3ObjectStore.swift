import Crypto
import Foundation
import Gateway
import S3
import TransferEngine

/// The engine's `ObjectStore` port over the S3 client. S3 errors become `TransferError`
/// with S3's code and the client's retry verdict. Every body sent carries a checksum S3
/// verifies: `checksum` says which for a single PutObject; a part's upload says it for parts.
/// A conditional write (a `WriteCondition`, a delete with `ifMatch`) holds its key in `keyLocks`
/// while it runs: the store checks the condition, but two writes at one instant may both pass.
public struct S3ObjectStore: ObjectStore {
    let client: S3Client
    let checksum: PartChecksum
    let keyLocks: (any KeyLocks)?

    public init(client: S3Client, checksum: PartChecksum = .crc32c, keyLocks: (any KeyLocks)? = nil) {
        self.client = client
        self.checksum = checksum
        self.keyLocks = keyLocks
    }

    public func properties(of key: String) async throws -> ObjectProperties {
        try await mapped {
            let head = try await client.headObject(key: key)
            return ObjectProperties(
                size: head.size, etag: head.etag, lastModified: head.lastModified,
                attributes: ObjectAttributesSpec(
                    contentType: head.contentType, cacheControl: head.cacheControl,
                    contentDisposition: head.contentDisposition,
                    serverSideEncryption: head.serverSideEncryption,
                    kmsKeyId: head.kmsKeyId, metadata: head.metadata))
        }
    }

    public func fullObjectChecksum(of key: String) async throws -> (checksum: ObjectChecksum, etag: String)? {
        let head = try await mapped { try await client.headObject(key: key, checksumMode: true) }
        return Self.fullObject(head).map { ($0, head.etag) }
    }

    /// A checksum of the whole object from a HEAD: `FULL_OBJECT`, or a value with no type
    /// (a single PutObject's, as SeaweedFS answers it) that is not `COMPOSITE`'s `…-N`.
    static func fullObject(_ head: ObjectHead) -> ObjectChecksum? {
        guard head.checksumType.map({ $0.uppercased() == "FULL_OBJECT" }) ?? true else { return nil }
        if let value = head.checksumCRC32C, !value.contains("-"), ObjectChecksum.crc32cValue(value) != nil {
            return ObjectChecksum(algorithm: .crc32c, value: value)
        }
        if let value = head.checksumSHA256, !value.contains("-") {
            let candidate = ObjectChecksum(algorithm: .sha256, value: value)
            if candidate.digest != nil { return candidate }
        }
        return nil
    }

    public func list(prefix: String, after: String?, limit: Int, delimiter: String?) async throws -> ObjectPage {
        try await mapped {
            let page = try await client.listObjectsPage(prefix: prefix, startAfter: after, limit: limit, delimiter: delimiter)
            return ObjectPage(
                objects: page.objects.map { ObjectSummary(key: $0.key, size: $0.size, etag: $0.etag, lastModified: $0.lastModified) },
                folders: page.prefixes, next: page.nextStartAfter)
        }
    }

    public func createMultipartUpload(key: String, attributes: ObjectAttributesSpec, checksum: PartChecksum?) async throws -> String {
        try await mapped {
            try await client.createMultipartUpload(
                key: key, attributes: Self.attributes(attributes.withDefaultType),
                checksumAlgorithm: checksum == .crc32c ? "CRC32C" : nil)
        }
    }

    public func copyPart(
        key: String, uploadID: String, part: Int, sourceKey: String, range: ClosedRange<Int64>?,
        ifMatch: String?
    ) async throws -> String {
        try await mapped {
            try await client.uploadPartCopy(
                key: key, uploadId: uploadID, partNumber: part, sourceKey: sourceKey, range: range,
                ifMatch: ifMatch)
        }
    }

    public func listParts(key: String, uploadID: String) async throws -> [RecordedPart] {
        try await mapped {
            try await client.listParts(key: key, uploadId: uploadID).map {
                RecordedPart(number: $0.partNumber, size: $0.size, etag: $0.etag, checksum: $0.checksumCRC32C)
            }
        }
    }

    public func completeMultipartUpload(
        key: String, uploadID: String, parts: [RecordedPart], condition: WriteCondition?
    ) async throws -> String {
        try await conditional(condition, key: key) {
            try await client.completeMultipartUpload(
                key: key, uploadId: uploadID, parts: parts.map { (partNumber: $0.number, etag: $0.etag) },
                checksums: Dictionary(
                    parts.compactMap { part in part.checksum.map { (part.number, $0) } },
                    uniquingKeysWith: { _, later in later }),
                conditions: Self.headers(condition))
        }
    }

    public func abortMultipartUpload(key: String, uploadID: String) async throws {
        try await mapped { try await client.abortMultipartUpload(key: key, uploadId: uploadID) }
    }

    public func openUploads(key: String, olderThan age: Double) async throws -> [String] {
        let cutoff = Date().addingTimeInterval(-age)
        return try await mapped {
            try await client.listMultipartUploads(prefix: key)
                .filter { $0.key == key && (RFC3339.date(from: $0.initiated).map { $0 <= cutoff } ?? true) }
                .map(\.uploadId)
        }
    }

    public func copyObject(
        from sourceKey: String, to key: String, attributes: ObjectAttributesSpec?, ifMatch: String?, condition: WriteCondition?
    ) async throws -> String {
        do {
            return try await held(key, when: condition != nil) {
                try await client.copyObject(
                    from: sourceKey, to: key, attributes: attributes.map(Self.attributes), ifMatch: ifMatch,
                    conditions: Self.headers(condition))
            }
        } catch let error as TransferError where error.code == .preconditionFailed && condition != nil {
            // 412 says one of the two conditions failed: the source's pin, or the destination's.
            if let ifMatch, (try? await client.headObject(key: sourceKey).etag) != ifMatch { throw error }
            throw condition?.failure ?? error
        }
    }

    public func deleteObject(key: String, ifMatch: String?) async throws {
        try await held(key, when: ifMatch != nil) { try await client.deleteObject(key: key, ifMatch: ifMatch) }
    }

    public func uploadPart(key: String, uploadID: String, part: Int, data: PartData, checksum: PartChecksum) async throws -> RecordedPart {
        defer { withExtendedLifetime(data) {} }
        switch checksum {
        case .crc32c:
            let crc = try data.crc32cBase64()
            let etag = try await mapped {
                try await client.uploadPart(key: key, uploadId: uploadID, partNumber: part, body: Self.body(data), checksumCRC32C: crc)
            }
            return RecordedPart(number: part, size: data.count, etag: etag, checksum: crc)
        case .md5:
            let md5 = try Self.contentMD5(data)
            let etag = try await mapped {
                try await client.uploadPart(key: key, uploadId: uploadID, partNumber: part, body: Self.body(data), contentMD5: md5)
            }
            return RecordedPart(number: part, size: data.count, etag: etag)
        }
    }

    public func putObject(
        key: String, data: PartData, attributes: ObjectAttributesSpec, condition: WriteCondition?
    ) async throws
        -> String
    {
        defer { withExtendedLifetime(data) {} }
        let md5 = checksum == .md5 ? try Self.contentMD5(data) : nil
        let crc = checksum == .crc32c ? try data.crc32cBase64() : nil
        return try await conditional(condition, key: key) {
            try await client.putObject(
                key: key, body: Self.body(data), attributes: Self.attributes(attributes.withDefaultType),
                contentMD5: md5, checksumCRC32C: crc, conditions: Self.headers(condition))
        }
    }

    /// `If-None-Match: *` or `If-Match: etag`.
    static func headers(_ condition: WriteCondition?) -> [(String, String)] {
        switch condition {
        case nil: return []
        case .absent: return [("If-None-Match", "*")]
        case .etag(let etag): return [("If-Match", etag)]
        }
    }

    /// `mapped`, holding the key when there is a condition, a 412 being the condition failing.
    private func conditional<T>(_ condition: WriteCondition?, key: String, _ work: () async throws -> T) async throws -> T {
        do {
            return try await held(key, when: condition != nil, work)
        } catch let error as TransferError where error.code == .preconditionFailed {
            throw condition?.failure ?? error
        }
    }

    /// `mapped`, with `key` held in `keyLocks` while `work` runs when `when` is true.
    private func held<T>(_ key: String, when: Bool, _ work: () async throws -> T) async throws -> T {
        guard when, let keyLocks else { return try await mapped(work) }
        return try await keyLocks.withLock("object:" + key) { try await mapped(work) }
    }

    public func read(key: String, range: ClosedRange<Int64>, ifMatch: String?) async throws -> [UInt8] {
        try await read(key: key, range: range, ifMatch: ifMatch, sink: .memory(limit: Self.length(of: range)))
    }

    public func read(key: String, range: ClosedRange<Int64>, ifMatch: String?, reusing storage: consuming [UInt8]) async throws -> [UInt8] {
        let sink = ResponseBodySink.memoryReusing(limit: Self.length(of: range), storage: ReusableBytes(consume storage))
        return try await read(key: key, range: range, ifMatch: ifMatch, sink: sink)
    }

    private static func length(of range: ClosedRange<Int64>) -> Int { Int(range.upperBound - range.lowerBound + 1) }

    private func read(key: String, range: ClosedRange<Int64>, ifMatch: String?, sink: ResponseBodySink) async throws -> [UInt8] {
        let length = Self.length(of: range)
        return try await mapped {
            let body = try await client.getObject(key: key, range: range, ifMatch: ifMatch, sink: sink).body
            // A short or long answer is not the range asked for: the store is not to be trusted on it.
            guard body.count == length else { throw S3Error(kind: .transport, status: 206, code: "IncompleteBody", message: "short range") }
            return body
        }
    }

    /// `Content-MD5` of a part's bytes, the same check for stores without S3's checksum headers.
    static func contentMD5(_ data: PartData) throws -> String {
        switch data {
        case .bytes(let bytes):
            return S3Client.contentMD5(bytes)
        case .file(let file, let offset, let length, _):
            guard length > 0 else { return S3Client.contentMD5([]) }
            guard let digest = file.md5Digest(offset...(offset + length - 1)) else {
                throw TransferError(code: .spoolFailed, retryable: true)
            }
            return Data(digest).base64EncodedString()
        }
    }

    public func read(key: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile, at fileOffset: Int64) async throws {
        defer { withExtendedLifetime(file) {} }
        _ = try await mapped {
            try await client.getObject(key: key, range: range, ifMatch: ifMatch, sink: .file(fd: file.fd, offset: fileOffset))
        }
    }

    /// The request body of a part: its bytes, or its range of the spool file (the caller keeps
    /// the file open for the request's life).
    static func body(_ data: PartData) -> RequestBodySource {
        switch data {
        case .bytes(let bytes): return .bytes(bytes)
        case .file(let file, let offset, let length, _): return .file(fd: file.fd, offset: offset, length: length)
        }
    }

    static func attributes(_ spec: ObjectAttributesSpec) -> ObjectAttributes {
        ObjectAttributes(
            contentType: spec.contentType, cacheControl: spec.cacheControl, contentDisposition: spec.contentDisposition,
            serverSideEncryption: spec.serverSideEncryption, kmsKeyId: spec.kmsKeyId, metadata: spec.metadata)
    }

    private func mapped<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as S3Error {
            throw TransferError(error)
        }
    }
}
