import Foundation
import Gateway
import S3

/// The `BucketMaintenance` port over the S3 client: what the janitor asks of the bucket.
public struct S3BucketMaintenance: BucketMaintenance {
    let client: S3Client

    public init(client: S3Client) {
        self.client = client
    }

    public func abortIfOpen(key: String, uploadID: String) async throws {
        try await client.abortIfOpen(key: key, uploadId: uploadID)
    }

    public func uploads(of key: String) async throws -> [(id: String, initiated: Date?)] {
        try await client.listMultipartUploads(prefix: key).filter { $0.key == key }.map { ($0.uploadId, RFC3339.date(from: $0.initiated)) }
    }

    public func newestPart(key: String, uploadID: String) async throws -> Date? {
        try await client.listParts(key: key, uploadId: uploadID).compactMap { $0.lastModified.flatMap(RFC3339.date(from:)) }.max()
    }

    public func objects(under prefix: String) async throws -> [(key: String, modified: Date?)] {
        try await client.listObjects(prefix: prefix).map { ($0.key, RFC3339.date(from: $0.lastModified)) }
    }

    public func delete(key: String) async throws {
        try await client.deleteObject(key: key)
    }
}
