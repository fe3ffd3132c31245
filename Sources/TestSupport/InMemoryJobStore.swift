import Synchronization
import TransferEngine

/// The job store's twin: the same lease rules as the PostgreSQL store (every write under a
/// lease checks its token and the running state), the same fair claim order, quotas, crash
/// counts and upload tails, in memory, on the test's clock. `JobStoreContract` (PortContracts)
/// runs the same cases on this twin and on `PostgresJobStore`.
///
/// In PostgreSQL the jobs and the client uploads share a database: an identity's open uploads
/// count both, and upload ids in use on a key come from both. A `InMemoryClientUploadStore`
/// made with `jobs:` this store is that other table; without one, there are no client uploads.
public final class InMemoryJobStore: UploadJobStore {
    struct Tables {
        var jobs: [String: Job] = [:]
        var parts: [String: [Int: RecordedPart]] = [:]
        var leases: [String: (owner: String, token: Int64, expiresAt: Int64)] = [:]
        var tokens: [String: Int64] = [:]
        var tails: [String: [TailSegment]] = [:]
        var partWrites = 0
        /// `ObjectChecksumStore`'s table: checksums by object key and ETag.
        var checksums: [ObjectChecksumKey: ObjectChecksum] = [:]
    }
    let state = Mutex(Tables())
    /// The twin of PostgreSQL's per-identity advisory lock: a quota check and its insert, in
    /// this store or the linked client-upload store, run under it one at a time.
    let ownerLock = Mutex(())
    private let linked = Mutex(LinkedUploads())
    private struct LinkedUploads {
        weak var store: InMemoryClientUploadStore?
    }
    public let clock: any EngineClock
    /// Runs before every write made under a lease: a test's crash point (throw to fail it).
    public let beforeWrite: @Sendable (String) throws -> Void

    public init(clock: any EngineClock, beforeWrite: @escaping @Sendable (String) throws -> Void = { _ in }) {
        self.clock = clock
        self.beforeWrite = beforeWrite
    }

    /// An insert of an id the store holds already (PostgreSQL: the primary key's unique violation).
    public struct DuplicateID: Error, Equatable {
        /// The id inserted again.
        public let id: String
    }

    /// Makes `uploads` the client-upload table beside this one (`InMemoryClientUploadStore(jobs:)` calls it).
    func link(_ uploads: InMemoryClientUploadStore) {
        linked.withLock { $0.store = uploads }
    }

    /// Upload jobs of `owner` not yet ended: what the linked client-upload store counts too.
    func openUploadJobs(owner: String) -> Int {
        state.withLock { s in s.jobs.values.filter { $0.owner == owner && $0.kind == .upload && !$0.state.isFinal }.count }
    }

    @discardableResult
    public func insert(_ job: Job, quota: OwnerQuota?) async throws -> Job {
        guard let quota else { return try store(job) }
        // As PostgreSQL's OwnerLimits: under the identity's lock, active jobs, then open
        // uploads (upload jobs not ended and client uploads creating or open) against the quota.
        return try ownerLock.withLock { _ in
            let clientUploads = linked.withLock { $0.store }?.openUploads(owner: job.owner) ?? 0
            return try store(job) { s in
                let active = s.jobs.values.filter { $0.owner == job.owner && !$0.state.isFinal }
                if active.count >= quota.maxActiveJobs { throw QuotaExceeded(limit: .activeJobs, maximum: quota.maxActiveJobs) }
                if job.kind == .upload && active.filter({ $0.kind == .upload }).count + clientUploads >= quota.maxOpenUploads {
                    throw QuotaExceeded(limit: .openUploads, maximum: quota.maxOpenUploads)
                }
            }
        }
    }

    /// Stores what PostgreSQL's INSERT writes of `job` (its description and counters); the
    /// fields of a run (lease, plan, attempts, error…) start as the table's defaults.
    private func store(_ job: Job, check: (Tables) throws -> Void = { _ in }) throws -> Job {
        try state.withLock { s in
            try check(s)
            guard s.jobs[job.id] == nil else { throw DuplicateID(id: job.id) }
            var stored = Job(
                id: job.id, owner: job.owner, kind: job.kind, state: job.state, objectKey: job.objectKey,
                source: job.source, options: job.options, bytesTotal: job.bytesTotal, partSize: job.partSize)
            stored.etag = job.etag
            stored.sourceETag = job.sourceETag
            stored.checksum = job.checksum
            stored.bytesTransferred = job.bytesTransferred
            stored.bytesCommitted = job.bytesCommitted
            stored.createdAt = Int64(clock.now())
            stored.updatedAt = stored.createdAt
            stored.bytesAt = stored.createdAt
            if stored.state.isFinal { stored.completedAt = stored.createdAt }
            s.jobs[job.id] = stored
            return stored
        }
    }

    /// A job as the store answers it: with its count of recorded parts, as PostgreSQL counts
    /// them on every read.
    static func shown(_ s: Tables, _ job: Job) -> Job {
        var job = job
        job.partsCompleted = s.parts[job.id]?.count ?? 0
        return job
    }

    public func job(id: String) async throws -> Job? {
        state.withLock { s in s.jobs[id].map { Self.shown(s, $0) } }
    }

    private static func runnable(_ s: Tables, _ job: Job, now: Int64) -> Bool {
        job.kind != .upload && (job.retryAt ?? 0) <= now
            && (JobLifecycle.allows(.claim, from: job.state)
                || (job.state == .running && (s.leases[job.id]?.expiresAt ?? 0) < now))
    }

    public func claim(owner: String, leaseMilliseconds: Int64, excluding: Set<String>) async throws -> (Job, Lease)? {
        let now = Int64(clock.now())
        return state.withLock { s in
            var busy: [String: Int] = [:]
            for job in s.jobs.values where job.kind != .upload && job.state == .running && (s.leases[job.id]?.expiresAt ?? 0) >= now {
                busy[job.owner, default: 0] += 1
            }
            let waiting = s.jobs.values.filter { Self.runnable(s, $0, now: now) && !excluding.contains($0.owner) }
                .sorted { (busy[$0.owner] ?? 0, $0.createdAt, $0.id) < (busy[$1.owner] ?? 0, $1.createdAt, $1.id) }
            guard var job = waiting.first else { return nil }
            // Taken from a holder that neither finished nor released it: it died.
            if job.state == .running && s.leases[job.id] != nil { job.crashes += 1 }
            let token = (s.tokens[job.id] ?? 0) + 1
            s.tokens[job.id] = token
            s.leases[job.id] = (owner, token, now + leaseMilliseconds)
            job.state = .running
            job.attempts += 1
            job.version += 1
            job.updatedAt = Int64(now)
            s.jobs[job.id] = job
            return (Self.shown(s, job), Lease(jobID: job.id, owner: owner, token: token, expiresAt: now + leaseMilliseconds))
        }
    }

    public func waitingOwners(limit: Int) async throws -> [String] {
        let now = Int64(clock.now())
        return state.withLock { s in
            Array(Set(s.jobs.values.filter { Self.runnable(s, $0, now: now) }.map(\.owner)).sorted().prefix(limit))
        }
    }

    func owned(_ s: Tables, _ lease: Lease) -> Bool {
        s.tokens[lease.jobID] == lease.token && s.jobs[lease.jobID]?.state == .running
    }

    /// Checks the lease (and the test's crash point) before a write.
    func guardWrite(_ s: Tables, _ lease: Lease, _ what: String) throws {
        try beforeWrite(what)
        guard owned(s, lease) else { throw LeaseLost(jobID: lease.jobID) }
    }

    public func renew(_ lease: Lease, leaseMilliseconds: Int64, flowing: Int64?) async throws -> Lease {
        let now = Int64(clock.now())
        return try state.withLock { s in
            try guardWrite(s, lease, "renew")
            s.leases[lease.jobID] = (lease.owner, lease.token, now + leaseMilliseconds)
            if let flowing, s.jobs[lease.jobID]?.bytesFlowing != flowing {
                s.jobs[lease.jobID]?.bytesFlowing = flowing
                s.jobs[lease.jobID]?.version += 1
            }
            return Lease(jobID: lease.jobID, owner: lease.owner, token: lease.token, expiresAt: now + leaseMilliseconds)
        }
    }

    public func beginCompleting(_ lease: Lease) async throws {
        try state.withLock { s in
            try guardWrite(s, lease, "beginCompleting")
            s.jobs[lease.jobID]?.completing = true
        }
    }

    public func release(_ lease: Lease) async throws {
        let now = Int64(clock.now())
        try state.withLock { s in
            try beforeWrite("release")
            guard owned(s, lease) else { return }
            s.leases[lease.jobID] = nil
            s.jobs[lease.jobID]?.version += 1
            s.jobs[lease.jobID]?.updatedAt = now
        }
    }

    public func recordPart(_ part: RecordedPart, under lease: Lease) async throws {
        try await recordParts([part], under: lease)
    }

    /// Writes that recorded parts (a `recordPart` or `recordParts` each).
    public var partWrites: Int { state.withLock { $0.partWrites } }

    public func recordParts(_ parts: [RecordedPart], under lease: Lease) async throws {
        let now = Int64(clock.now())
        try state.withLock { s in
            try guardWrite(s, lease, "recordPart")
            for part in parts {
                let previous = s.parts[lease.jobID]?[part.number]?.size ?? 0
                s.parts[lease.jobID, default: [:]][part.number] = part
                s.jobs[lease.jobID]?.bytesCommitted += part.size - previous
                s.jobs[lease.jobID]?.bytesTransferred += part.size - previous
            }
            s.jobs[lease.jobID]?.bytesAt = now
            s.jobs[lease.jobID]?.retries = 0
            s.jobs[lease.jobID]?.version += 1
            s.jobs[lease.jobID]?.updatedAt = now
            s.partWrites += 1
        }
    }

    public func parts(of jobID: String) async throws -> [RecordedPart] {
        state.withLock { s in (s.parts[jobID] ?? [:]).values.sorted { $0.number < $1.number } }
    }

    public func start(
        _ lease: Lease, uploadID: String?, partChecksum: PartChecksum?, partsTotal: Int, partSize: Int64,
        bytesTotal: Int64?, sourceETag: String?
    ) async throws {
        let now = Int64(clock.now())
        try state.withLock { s in
            try guardWrite(s, lease, "start")
            let dropped = (s.parts[lease.jobID] ?? [:]).values.reduce(Int64(0)) { $0 + $1.size }
            s.parts[lease.jobID] = nil
            s.jobs[lease.jobID]?.bytesCommitted -= dropped
            s.jobs[lease.jobID]?.bytesTransferred -= dropped
            s.jobs[lease.jobID]?.uploadID = uploadID
            s.jobs[lease.jobID]?.partChecksum = partChecksum
            s.jobs[lease.jobID]?.partsTotal = partsTotal
            s.jobs[lease.jobID]?.partSize = partSize
            s.jobs[lease.jobID]?.bytesTotal = bytesTotal
            s.jobs[lease.jobID]?.sourceETag = sourceETag
            s.jobs[lease.jobID]?.version += 1
            s.jobs[lease.jobID]?.updatedAt = now
        }
    }

    public func finish(
        _ lease: Lease, state newState: Job.State, etag: String?, error: JobFailure?, checksum: ObjectChecksum?
    ) async throws {
        let now = Int64(clock.now())
        try state.withLock { s in
            try guardWrite(s, lease, "finish")
            let ending = JobLifecycle.target(of: JobLifecycle.ending(newState))
            s.jobs[lease.jobID]?.state = ending
            s.jobs[lease.jobID]?.etag = etag
            let kept = ending == .completed ? checksum : nil
            s.jobs[lease.jobID]?.checksum = kept
            if let kept, let etag, let key = s.jobs[lease.jobID]?.objectKey {
                s.checksums[ObjectChecksumKey(key: key, etag: etag)] = kept
            }
            s.jobs[lease.jobID]?.error = error
            s.jobs[lease.jobID]?.completedAt = now
            s.jobs[lease.jobID]?.updatedAt = now
            s.jobs[lease.jobID]?.version += 1
            if newState == .completed, s.jobs[lease.jobID]?.bytesTotal == nil {
                let committed = s.jobs[lease.jobID]?.bytesCommitted
                s.jobs[lease.jobID]?.bytesTotal = committed
            }
            s.leases[lease.jobID] = nil
        }
    }

    public func postpone(_ lease: Lease, until retryAt: Int64, lastError: JobFailure) async throws {
        let now = Int64(clock.now())
        try state.withLock { s in
            try guardWrite(s, lease, "postpone")
            guard var job = s.jobs[lease.jobID] else { return }
            job.state = JobLifecycle.target(of: .postpone)
            job.retryAt = retryAt
            job.lastError = lastError
            job.retries += 1
            job.bytesFlowing = 0
            job.version += 1
            job.updatedAt = now
            s.jobs[lease.jobID] = job
            s.leases[lease.jobID] = nil
        }
    }

    public func retry(id: String, failedSince: Int64, quota: OwnerQuota?) async throws -> Job? {
        let now = Int64(clock.now())
        return try ownerLock.withLock { _ in
            try state.withLock { s in
                try Self.retry(&s, id: id, failedSince: failedSince, quota: quota, now: now)
            }
        }
    }

    private static func retry(_ s: inout Tables, id: String, failedSince: Int64, quota: OwnerQuota?, now: Int64) throws -> Job? {
        guard var job = s.jobs[id] else { return nil }
        if JobLifecycle.allows(.retry, from: job.state), job.error?.retryable == true, (job.completedAt ?? 0) >= failedSince {
            if let quota, s.jobs.values.filter({ $0.owner == job.owner && !$0.state.isFinal }).count >= quota.maxActiveJobs {
                throw QuotaExceeded(limit: .activeJobs, maximum: quota.maxActiveJobs)
            }
            job.state = JobLifecycle.target(of: JobLifecycle.retry(job.kind))
            job.lastError = job.error
            job.error = nil
            job.completedAt = nil
            job.retryAt = nil
            job.retries = 0
            job.crashes = 0
            job.bytesAt = now
            job.version += 1
            job.updatedAt = now
            s.jobs[id] = job
        }
        return Self.shown(s, job)
    }

    public func list(owner: String?, state wanted: Job.State?, kind: Job.Kind?, limit: Int, after cursor: String?) async throws -> [Job] {
        state.withLock { s in
            // A cursor naming no job lists nothing (PostgreSQL compares with a NULL row).
            let mark = cursor.map { s.jobs[$0].map { ($0.createdAt, $0.id) } }
            if case .some(.none) = mark { return [] }
            return Array(
                s.jobs.values.filter { job in
                    (owner == nil || job.owner == owner) && (wanted == nil || job.state == wanted) && (kind == nil || job.kind == kind)
                        && (mark.flatMap { $0 }.map { (job.createdAt, job.id) < $0 } ?? true)
                }.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }.prefix(limit).map { Self.shown(s, $0) })
        }
    }

    public func transition(id: String, _ action: JobLifecycle.Action) async throws -> Job? {
        let now = Int64(clock.now())
        return state.withLock { s in
            guard var job = s.jobs[id] else { return nil }
            if JobLifecycle.allows(action, from: job.state) && !(job.completing && JobLifecycle.refusedWhileCompleting(action)) {
                job.state = JobLifecycle.target(of: action)
                job.retryAt = nil
                if job.state.isFinal { job.completedAt = now }
                job.version += 1
                job.updatedAt = now
                s.jobs[id] = job
            }
            return Self.shown(s, job)
        }
    }

    public func uploadIDsInUse(key: String) async throws -> Set<String> {
        let jobs = state.withLock { s in
            Set(
                s.jobs.values.filter { $0.objectKey == key && (!$0.state.isFinal || ($0.state == .failed && $0.error?.retryable == true)) }
                    .compactMap(\.uploadID))
        }
        return jobs.union(linked.withLock { $0.store }?.openUploadIDs(key: key) ?? [])
    }

    // MARK: for tests

    /// Makes the job's lease lapse now (its worker stalled past it, or died).
    public func expireLease(_ id: String) {
        state.withLock { s in
            if let lease = s.leases[id] { s.leases[id] = (lease.owner, lease.token, 0) }
        }
    }

    /// Who holds the job's lease now, if anyone does.
    public func leaseHolder(_ id: String) -> String? {
        let now = Int64(clock.now())
        return state.withLock { s in s.leases[id].flatMap { $0.expiresAt >= now ? $0.owner : nil } }
    }

    /// The tail pieces the store lists for `id`.
    public func tail(of id: String) -> [TailSegment] { state.withLock { $0.tails[id] ?? [] } }
}

/// The object checksums kept beside the jobs, as PostgreSQL's `object_checksums` table is.
extension InMemoryJobStore: ObjectChecksumStore {
    public func checksum(ofKey key: String, etag: String) async throws -> ObjectChecksum? {
        state.withLock { $0.checksums[ObjectChecksumKey(key: key, etag: etag)] }
    }

    public func record(_ checksum: ObjectChecksum, key: String, etag: String) async throws {
        state.withLock { $0.checksums[ObjectChecksumKey(key: key, etag: etag)] = checksum }
    }
}

/// An object at one version: the key of `ObjectChecksumStore`'s records.
struct ObjectChecksumKey: Hashable {
    let key: String
    let etag: String
}
