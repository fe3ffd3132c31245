import Gateway
import Synchronization
import TransferEngine

/// The client-upload store's twin: records in memory, under the same rules as the PostgreSQL
/// store (`ClientUploadStoreContract` in PortContracts runs the same cases on both). Made with
/// `jobs:`, it is the `uploads` table beside that job store's `jobs`: an identity's open uploads
/// count its upload jobs not yet ended too, as PostgreSQL counts both tables, and the job
/// store's upload ids in use include these uploads'.
public final class InMemoryClientUploadStore: ClientUploadStore {
    private let uploads = Mutex<[String: (upload: ClientUpload, touched: Double)]>([:])
    private let signatures = Mutex<[String: [Int: Set<String>]]>([:])
    private let now: @Sendable () -> Double
    private let jobs: InMemoryJobStore?

    /// `now`: seconds since 1970 on the test's clock. `jobs`: the job store sharing the
    /// identity's open-upload quota (nil: no upload jobs count).
    public init(now: @escaping @Sendable () -> Double = { 0 }, jobs: InMemoryJobStore? = nil) {
        self.now = now
        self.jobs = jobs
        jobs?.link(self)
    }

    /// Uploads `creating` or `open` of `owner`: what an open-upload quota counts of this table.
    func openUploads(owner: String) -> Int {
        uploads.withLock { u in u.values.filter { $0.upload.owner == owner && [.creating, .open].contains($0.upload.state) }.count }
    }

    /// The S3 upload ids of the open uploads of `key`, which no sweep may abort.
    func openUploadIDs(key: String) -> Set<String> {
        uploads.withLock { u in
            Set(u.values.filter { $0.upload.objectKey == key && $0.upload.state == .open }.compactMap(\.upload.s3UploadID))
        }
    }

    /// An upload recorded under an id the store holds already (PostgreSQL: the primary key's
    /// unique violation).
    public struct DuplicateID: Error, Equatable {
        /// The id begun again.
        public let id: String
    }

    public func begin(_ upload: ClientUpload, quota: OwnerQuota) async throws {
        let record = {
            let time = self.now()
            try self.uploads.withLock { u in
                let open = u.values.filter { $0.upload.owner == upload.owner && [.creating, .open].contains($0.upload.state) }.count
                let jobs = self.jobs?.openUploadJobs(owner: upload.owner) ?? 0
                if open + jobs >= quota.maxOpenUploads { throw QuotaExceeded(limit: .openUploads, maximum: quota.maxOpenUploads) }
                guard u[upload.id] == nil else { throw DuplicateID(id: upload.id) }
                // What PostgreSQL's INSERT writes: a record `creating`, with no S3 upload yet.
                var stored = upload
                stored.state = .creating
                stored.s3UploadID = nil
                stored.etag = nil
                stored.checksum = nil
                stored.createdAt = time
                u[upload.id] = (stored, time)
            }
        }
        // Under the identity's lock shared with the job store, as PostgreSQL's OwnerLimits.
        if let jobs { try jobs.ownerLock.withLock { _ in try record() } } else { try record() }
    }

    public func opened(id: String, s3UploadID: String) async throws {
        let time = now()
        uploads.withLock { u in
            u[id]?.upload.s3UploadID = s3UploadID
            u[id]?.upload.state = .open
            u[id]?.touched = time
        }
    }

    public func upload(id: String) async throws -> ClientUpload? { uploads.withLock { $0[id]?.upload } }

    public func open(owner: String, limit: Int, after cursor: String?) async throws -> [ClientUpload] {
        uploads.withLock { u in
            // A cursor naming no upload lists nothing (PostgreSQL compares with a NULL row).
            let mark = cursor.map { u[$0].map { ($0.upload.createdAt, $0.upload.id) } }
            if case .some(.none) = mark { return [] }
            return Array(
                u.values.map(\.upload).filter { upload in
                    upload.owner == owner && upload.state == .open
                        && (mark.flatMap { $0 }.map { (upload.createdAt, upload.id) < $0 } ?? true)
                }.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }.prefix(limit))
        }
    }

    public func touch(id: String) async throws {
        let time = now()
        uploads.withLock { $0[id]?.touched = time }
    }

    public func claim(id: String, for state: ClientUpload.State) async throws -> Bool {
        let time = now()
        return uploads.withLock { u in
            let stale = u[id].map { $0.upload.state == state && time - $0.touched >= Double(ClientUpload.staleClaimSeconds) } ?? false
            guard u[id]?.upload.state == .open || stale else { return false }
            u[id]?.upload.state = state
            u[id]?.touched = time
            return true
        }
    }

    /// Makes the upload's claim stale, as if made `ClientUpload.staleClaimSeconds` ago (tests:
    /// a request that died with its instance).
    public func release(claimOf id: String) async throws {
        uploads.withLock { $0[id]?.touched -= Double(ClientUpload.staleClaimSeconds + 1) }
    }

    public func unclaim(id: String) async throws {
        let time = now()
        uploads.withLock { u in
            guard let state = u[id]?.upload.state, state == .completing || state == .aborting else { return }
            u[id]?.upload.state = .open
            u[id]?.touched = time
        }
    }

    public func completed(id: String, etag: String, checksum: ObjectChecksum?) async throws {
        let key = uploads.withLock { u -> String? in
            guard u[id]?.upload.state == .completing else { return nil }
            u[id]?.upload.state = .completed
            u[id]?.upload.etag = etag
            u[id]?.upload.checksum = checksum
            return u[id]?.upload.objectKey
        }
        // As PostgreSQL's one statement: the object's checksum recorded with the completion.
        if let key, let checksum { try await jobs?.record(checksum, key: key, etag: etag) }
    }

    public func signed(id: String, partChecksums: [(part: Int, checksum: String)]) async throws {
        signatures.withLock { s in
            for (part, checksum) in partChecksums where (s[id]?[part]?.count ?? 0) < ClientUpload.checksumsKeptPerPart {
                s[id, default: [:]][part, default: []].insert(checksum)
            }
        }
    }

    public func signedChecksums(id: String) async throws -> [Int: Set<String>] {
        signatures.withLock { $0[id] ?? [:] }
    }

    @discardableResult
    public func aborted(id: String) async throws -> Bool {
        uploads.withLock { u in
            guard let state = u[id]?.upload.state, [.open, .creating, .aborting, .completing].contains(state) else { return false }
            u[id]?.upload.state = .aborted
            return true
        }
    }

    public func idle(since cutoff: Double, prefixes: [String]) async throws -> [ClientUpload] {
        uploads.withLock { u in
            u.values.filter { entry in
                [.creating, .open, .completing, .aborting].contains(entry.upload.state) && entry.touched <= cutoff
                    && prefixes.contains { entry.upload.objectKey.hasPrefix($0) }
            }.map(\.upload)
        }
    }
}
