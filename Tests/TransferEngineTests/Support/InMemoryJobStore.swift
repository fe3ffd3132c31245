import Synchronization
@testable import TransferEngine

/// The job store's twin: the same lease rules as the PostgreSQL store (every write under a
/// lease checks its token and the running state), in memory, on the test's clock.
final class InMemoryJobStore: JobStore {
    private struct Tables {
        var jobs: [String: Job] = [:]
        var parts: [String: [Int: RecordedPart]] = [:]
        var leases: [String: (owner: String, token: Int64, expiresAt: Int64)] = [:]
        var tokens: [String: Int64] = [:]
    }
    private let state = Mutex(Tables())
    let clock: any EngineClock

    init(clock: any EngineClock) {
        self.clock = clock
    }

    @discardableResult
    func insert(_ job: Job) async throws -> Job {
        state.withLock { s in
            var stored = job
            stored.createdAt = Int64(clock.now())
            stored.updatedAt = stored.createdAt
            s.jobs[job.id] = stored
            return stored
        }
    }

    func job(id: String) async throws -> Job? {
        state.withLock { s in
            guard var job = s.jobs[id] else { return nil }
            job.partsCompleted = s.parts[id]?.count ?? 0
            return job
        }
    }

    func claim(owner: String, leaseMilliseconds: Int64) async throws -> (Job, Lease)? {
        let now = Int64(clock.now())
        return state.withLock { s in
            let runnable = s.jobs.values.filter { job in
                job.state == .queued || (job.state == .running && (s.leases[job.id]?.expiresAt ?? 0) < now)
            }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
            guard var job = runnable.first else { return nil }
            let token = (s.tokens[job.id] ?? 0) + 1
            s.tokens[job.id] = token
            s.leases[job.id] = (owner, token, now + leaseMilliseconds)
            job.state = .running
            job.attempts += 1
            job.version += 1
            s.jobs[job.id] = job
            return (job, Lease(jobID: job.id, owner: owner, token: token, expiresAt: now + leaseMilliseconds))
        }
    }

    private func owned(_ s: Tables, _ lease: Lease) -> Bool {
        s.tokens[lease.jobID] == lease.token && s.jobs[lease.jobID]?.state == .running
    }

    func renew(_ lease: Lease, leaseMilliseconds: Int64) async throws -> Lease {
        let now = Int64(clock.now())
        return try state.withLock { s in
            guard owned(s, lease) else { throw LeaseLost(jobID: lease.jobID) }
            s.leases[lease.jobID] = (lease.owner, lease.token, now + leaseMilliseconds)
            return Lease(jobID: lease.jobID, owner: lease.owner, token: lease.token, expiresAt: now + leaseMilliseconds)
        }
    }

    func release(_ lease: Lease) async throws {
        state.withLock { s in
            guard owned(s, lease) else { return }
            s.leases[lease.jobID] = nil
        }
    }

    func recordPart(_ part: RecordedPart, under lease: Lease) async throws {
        try state.withLock { s in
            guard owned(s, lease) else { throw LeaseLost(jobID: lease.jobID) }
            let previous = s.parts[lease.jobID]?[part.number]?.size ?? 0
            s.parts[lease.jobID, default: [:]][part.number] = part
            s.jobs[lease.jobID]?.bytesCommitted += part.size - previous
            s.jobs[lease.jobID]?.bytesTransferred += part.size - previous
            s.jobs[lease.jobID]?.version += 1
        }
    }

    func parts(of jobID: String) async throws -> [RecordedPart] {
        state.withLock { s in (s.parts[jobID] ?? [:]).values.sorted { $0.number < $1.number } }
    }

    func start(_ lease: Lease, uploadID: String?, partsTotal: Int, partSize: Int64, bytesTotal: Int64) async throws {
        try state.withLock { s in
            guard owned(s, lease) else { throw LeaseLost(jobID: lease.jobID) }
            s.jobs[lease.jobID]?.uploadID = uploadID
            s.jobs[lease.jobID]?.partsTotal = partsTotal
            s.jobs[lease.jobID]?.partSize = partSize
            s.jobs[lease.jobID]?.bytesTotal = bytesTotal
            s.jobs[lease.jobID]?.version += 1
        }
    }

    func finish(_ lease: Lease, state newState: Job.State, etag: String?, error: String?) async throws {
        let now = Int64(clock.now())
        try state.withLock { s in
            guard owned(s, lease) else { throw LeaseLost(jobID: lease.jobID) }
            s.jobs[lease.jobID]?.state = newState
            s.jobs[lease.jobID]?.etag = etag
            s.jobs[lease.jobID]?.error = error
            s.jobs[lease.jobID]?.completedAt = now
            s.jobs[lease.jobID]?.version += 1
            s.leases[lease.jobID] = nil
        }
    }

    func list(owner: String?, state wanted: Job.State?, limit: Int, after cursor: String?) async throws -> [Job] {
        state.withLock { s in
            Array(s.jobs.values.filter { (owner == nil || $0.owner == owner) && (wanted == nil || $0.state == wanted) }
                .sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }.prefix(limit))
        }
    }

    func transition(id: String, from: Set<Job.State>, to: Job.State) async throws -> Job? {
        state.withLock { s in
            guard var job = s.jobs[id] else { return nil }
            if from.contains(job.state) {
                job.state = to
                job.version += 1
                s.jobs[id] = job
            }
            return job
        }
    }

    func uploadIDsInUse(key: String) async throws -> Set<String> {
        state.withLock { s in
            Set(s.jobs.values.filter { $0.objectKey == key && !$0.state.isFinal }.compactMap(\.uploadID))
        }
    }

    /// Makes the job's lease lapse now (its worker stalled past it).
    func expireLease(_ id: String) {
        state.withLock { s in
            if let lease = s.leases[id] { s.leases[id] = (lease.owner, lease.token, 0) }
        }
    }

}
