import Foundation

/// The typed calls: jobs (`/v1/jobs`) and client uploads (`/v1/uploads`).
extension GatewayAPI {
    func createUploadJob(_ record: TransferRecord, size: Int64, bandwidthLimit: Int64?) async throws -> API.Job {
        let body = API.UploadJobCreate(
            accessLevel: record.reference.accessLevel.rawValue, key: record.reference.key, targetIdentityId: record.reference.owner,
            size: size, contentType: record.contentType, metadata: record.metadata, bandwidthLimit: bandwidthLimit)
        return try await decode(API.Job.self, jsonCall("POST", "v1/jobs", body: body, idempotencyKey: record.createKey))
    }

    func createDownloadJob(_ record: TransferRecord) async throws -> API.Job {
        let body = API.DownloadJobCreate(source: API.ObjectRef(record.reference))
        return try await decode(API.Job.self, jsonCall("POST", "v1/jobs", body: body, idempotencyKey: record.createKey))
    }

    func job(_ id: String) async throws -> API.Job {
        try await decode(API.Job.self, jsonCall("GET", "v1/jobs/\(id)", body: Optional<API.Complete>.none))
    }

    /// Cancels a job; a job already gone or ended is not an error here.
    func cancelJob(_ id: String) async {
        _ = try? await send(jsonCall("POST", "v1/jobs/\(id)/cancel", body: Optional<API.Complete>.none))
    }

    /// `checksums`: created with `checksumAlgorithm: CRC32C` (part URLs then come from
    /// `signCheckedParts`).
    func createUpload(_ record: TransferRecord, size: Int64, partSize: Int64?, checksums: Bool) async throws -> API.CreatedUpload {
        let body = API.UploadCreate(
            accessLevel: record.reference.accessLevel.rawValue, key: record.reference.key, targetIdentityId: record.reference.owner,
            size: size, contentType: record.contentType, metadata: record.metadata, partSize: partSize,
            checksumAlgorithm: checksums ? "CRC32C" : nil)
        return try await decode(API.CreatedUpload.self, jsonCall("POST", "v1/uploads", body: body, idempotencyKey: record.createKey))
    }

    func upload(_ id: String) async throws -> API.Upload {
        try await decode(API.Upload.self, jsonCall("GET", "v1/uploads/\(id)", body: Optional<API.Complete>.none))
    }

    func signParts(_ id: String, _ numbers: [Int]) async throws -> API.SignedParts {
        try await decode(API.SignedParts.self, jsonCall("POST", "v1/uploads/\(id)/parts", body: API.SignParts(partNumbers: numbers)))
    }

    /// Part URLs that sign each part's CRC-32C (base64), for a checksummed upload.
    func signCheckedParts(_ id: String, _ parts: [(number: Int, checksum: String)]) async throws -> API.SignedParts {
        let body = API.SignCheckedParts(parts: parts.map { API.SignCheckedParts.Part(partNumber: $0.number, checksum: $0.checksum) })
        return try await decode(API.SignedParts.self, jsonCall("POST", "v1/uploads/\(id)/parts", body: body))
    }

    /// Completes; with `checksum`, only if the parts make an object of that checksum.
    func completeUpload(_ id: String, checksum: API.Checksum? = nil) async throws -> API.CompletedObject {
        try await decode(API.CompletedObject.self, jsonCall("POST", "v1/uploads/\(id)/complete", body: API.Complete(checksum: checksum)))
    }

    /// Aborts a client upload; one already gone is not an error here.
    func abortUpload(_ id: String) async {
        _ = try? await send(jsonCall("DELETE", "v1/uploads/\(id)", body: Optional<API.Complete>.none))
    }
}
