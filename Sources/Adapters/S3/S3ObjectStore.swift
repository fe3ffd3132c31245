import Foundation
import Gateway
import S3
import TransferEngine

/// The engine's `ObjectStore` port over the S3 client. S3 errors become `TransferError`
/// with S3's code and the client's retry verdict.
public struct S3ObjectStore: ObjectStore {
    let client: S3Client

    public init(client: S3Client) {
        self.client = client
    }

    public func size(of key: String) async throws -> (size: Int64, etag: String) {
        try await mapped {
            let head = try await client.headObject(key: key)
            return (head.size, head.etag)
        }
    }

    public func createMultipartUpload(key: String, attributes: ObjectAttributesSpec) async throws -> String {
        try await mapped { try await client.createMultipartUpload(key: key, attributes: Self.attributes(attributes)) }
    }

    public func copyPart(key: String, uploadID: String, part: Int, sourceKey: String, range: ClosedRange<Int64>?,
                         ifMatch: String?) async throws -> String {
        try await mapped {
            try await client.uploadPartCopy(key: key, uploadId: uploadID, partNumber: part, sourceKey: sourceKey, range: range,
                                            ifMatch: ifMatch)
        }
    }

    public func listParts(key: String, uploadID: String) async throws -> [RecordedPart] {
        try await mapped {
            try await client.listParts(key: key, uploadId: uploadID).map { RecordedPart(number: $0.partNumber, size: $0.size, etag: $0.etag) }
        }
    }

    public func completeMultipartUpload(key: String, uploadID: String, parts: [RecordedPart]) async throws -> String {
        try await mapped {
            try await client.completeMultipartUpload(key: key, uploadId: uploadID, parts: parts.map { (partNumber: $0.number, etag: $0.etag) })
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

    public func copyObject(from sourceKey: String, to key: String, attributes: ObjectAttributesSpec, ifMatch: String?) async throws -> String {
        try await mapped {
            try await client.copyObject(from: sourceKey, to: key, attributes: Self.attributes(attributes), ifMatch: ifMatch)
        }
    }

    public func deleteObject(key: String) async throws {
        try await mapped { try await client.deleteObject(key: key) }
    }

    public func uploadPart(key: String, uploadID: String, part: Int, data: PartData) async throws -> String {
        defer { withExtendedLifetime(data) {} }
        return try await mapped { try await client.uploadPart(key: key, uploadId: uploadID, partNumber: part, body: Self.body(data)) }
    }

    public func putObject(key: String, data: PartData, attributes: ObjectAttributesSpec) async throws -> String {
        defer { withExtendedLifetime(data) {} }
        return try await mapped { try await client.putObject(key: key, body: Self.body(data), attributes: Self.attributes(attributes)) }
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
        case .file(let file, let offset, let length): return .file(fd: file.fd, offset: offset, length: length)
        }
    }

    static func attributes(_ spec: ObjectAttributesSpec) -> ObjectAttributes {
        ObjectAttributes(contentType: spec.contentType, cacheControl: spec.cacheControl, contentDisposition: spec.contentDisposition,
                         serverSideEncryption: spec.serverSideEncryption, metadata: spec.metadata)
    }

    private func mapped<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as S3Error {
            // A pinned source (If-Match, x-amz-copy-source-if-match) that changed meanwhile.
            if error.code == "PreconditionFailed" || error.status == 412 { throw TransferError.sourceChanged }
            throw TransferError(code: error.code, retryable: error.retryable)
        }
    }
}
