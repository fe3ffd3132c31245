import Gateway
import Synchronization
import TransferEngine

/// The client-upload store's twin: records in memory, the same quota rule as the PostgreSQL
/// store (open uploads per owner, upload jobs not counted here).
public final class InMemoryClientUploadStore: ClientUploadStore {
    private let uploads = Mutex<[String: (upload: ClientUpload, touched: Double)]>([:])
    private let now: @Sendable () -> Double

    public init(now: @escaping @Sendable () -> Double = { 0 }) {
        self.now = now
    }

    public func begin(_ upload: ClientUpload, quota: OwnerQuota) async throws {
        let time = now()
        try uploads.withLock { u in
            let open = u.values.filter { $0.upload.owner == upload.owner && [.creating, .open].contains($0.upload.state) }.count
            if open >= quota.maxOpenUploads { throw QuotaExceeded(limit: .openUploads, maximum: quota.maxOpenUploads) }
            var stored = upload
            stored.createdAt = time
            u[upload.id] = (stored, time)
        }
    }

    public func opened(id: String, s3UploadID: String) async throws {
        uploads.withLock { u in
            u[id]?.upload.s3UploadID = s3UploadID
            u[id]?.upload.state = .open
        }
    }

    public func upload(id: String) async throws -> ClientUpload? { uploads.withLock { $0[id]?.upload } }

    public func open(owner: String, limit: Int, after cursor: String?) async throws -> [ClientUpload] {
        uploads.withLock { u in
            let mark = cursor.flatMap { u[$0] }.map { ($0.upload.createdAt, $0.upload.id) }
            return Array(u.values.map(\.upload).filter { upload in
                upload.owner == owner && upload.state == .open && (mark.map { (upload.createdAt, upload.id) < $0 } ?? true)
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
            guard u[id]?.upload.state == .open else { return false }
            u[id]?.upload.state = state
            u[id]?.touched = time
            return true
        }
    }

    public func unclaim(id: String) async throws {
        let time = now()
        uploads.withLock { u in
            guard let state = u[id]?.upload.state, state == .completing || state == .aborting else { return }
            u[id]?.upload.state = .open
            u[id]?.touched = time
        }
    }

    public func completed(id: String, etag: String) async throws {
        uploads.withLock { u in
            guard u[id]?.upload.state == .completing else { return }
            u[id]?.upload.state = .completed
            u[id]?.upload.etag = etag
        }
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
