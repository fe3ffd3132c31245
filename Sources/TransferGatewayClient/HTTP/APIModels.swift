import Foundation

/// The JSON shapes of the gateway's API that the client sends and reads (`openapi.yaml`). Optional
/// fields are left out when `nil` (the gateway refuses `null`); unknown answer fields are ignored.
enum API {
    /// `ObjectRef`.
    struct ObjectRef: Codable, Sendable {
        let accessLevel: String
        let key: String
        let targetIdentityId: String?

        init(_ reference: ObjectReference) {
            accessLevel = reference.accessLevel.rawValue
            key = reference.key
            targetIdentityId = reference.owner
        }
    }

    /// `UploadJobCreate`.
    struct UploadJobCreate: Encodable, Sendable {
        let type = "upload"
        let accessLevel: String
        let key: String
        let targetIdentityId: String?
        let size: Int64
        let contentType: String?
        let metadata: [String: String]?
        let bandwidthLimit: Int64?
    }

    /// `DownloadJobCreate`.
    struct DownloadJobCreate: Encodable, Sendable {
        let type = "download"
        let source: ObjectRef
    }

    /// `Job`, the fields the client reads.
    struct Job: Decodable, Sendable {
        struct Failure: Decodable, Sendable {
            let code: String
            let detail: String?
        }
        let id: String
        let state: String
        let objectKey: String?
        let bytesTotal: Int64?
        let bytesCommitted: Int64
        let etag: String?
        let dataUrl: String?
        let error: Failure?
        let checksum: Checksum?
    }

    /// `checksum: {algorithm, value}`: a whole object's checksum.
    struct Checksum: Codable, Sendable {
        let algorithm: String
        let value: String
    }

    /// `POST /v1/uploads`'s body.
    struct UploadCreate: Encodable, Sendable {
        let accessLevel: String
        let key: String
        let targetIdentityId: String?
        let size: Int64
        let contentType: String?
        let metadata: [String: String]?
        let partSize: Int64?
        /// `CRC32C`: part URLs sign each part's checksum, so S3 refuses other bytes.
        let checksumAlgorithm: String?
    }

    /// A part's presigned URL, and the signed headers it must be sent with.
    struct PartURL: Decodable, Sendable {
        let partNumber: Int
        let url: String
        let headers: [String: String]?
    }

    /// `POST /v1/uploads/{id}/parts`'s body for a checksummed upload.
    struct SignCheckedParts: Encodable, Sendable {
        struct Part: Encodable, Sendable {
            let partNumber: Int
            let checksum: String
        }
        let parts: [Part]
    }

    /// `POST /v1/uploads`'s answer.
    struct CreatedUpload: Decodable, Sendable {
        let uploadId: String
        let objectKey: String
        let partSize: Int64
        let partCount: Int
        let parts: [PartURL]
        let expiresAt: String
        /// `CRC32C` when the upload's part URLs sign their checksums.
        let checksumAlgorithm: String?
    }

    /// `POST /v1/uploads/{id}/parts`'s body and answer.
    struct SignParts: Codable, Sendable {
        let partNumbers: [Int]
    }

    /// Fresh part URLs.
    struct SignedParts: Decodable, Sendable {
        let parts: [PartURL]
        let expiresAt: String
    }

    /// `Upload`: a client upload's state and the parts S3 holds.
    struct Upload: Decodable, Sendable {
        struct Part: Decodable, Sendable {
            let partNumber: Int
            let size: Int64
            let etag: String
        }
        let uploadId: String
        let state: String
        let objectKey: String
        let size: Int64
        let partSize: Int64
        let parts: [Part]
        let etag: String?
        let checksumAlgorithm: String?
        let checksum: Checksum?
    }

    /// `POST /v1/uploads/{id}/complete`'s body (no parts: the gateway lists them), with the
    /// whole object's checksum the parts must make, when known.
    struct Complete: Encodable, Sendable {
        var checksum: Checksum? = nil
    }

    /// The completed object.
    struct CompletedObject: Decodable, Sendable {
        let objectKey: String
        let size: Int64
        let etag: String
        let checksum: Checksum?
    }

    /// An RFC 3339 time of the API (with or without fractional seconds).
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
