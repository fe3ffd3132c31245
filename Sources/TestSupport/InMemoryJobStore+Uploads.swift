import Synchronization
import TransferEngine

/// Upload jobs in the twin: one request at a time holds one (its lease), its parts and the
/// tail of bytes not yet in a part, as `PostgresJobStore` keeps them.
extension InMemoryJobStore {
    public func claimUpload(id: String, owner: String, leaseMilliseconds: Int64) async throws -> UploadClaim? {
        let now = Int64(clock.now())
        return state.withLock { s in
            guard var job = s.jobs[id], job.kind == .upload else { return nil }
            let lease = s.leases[id]
            let takeable =
                JobLifecycle.allows(.claimUpload, from: job.state)
                || (job.state == .running && ((lease?.expiresAt ?? 0) < now || lease?.owner == owner))
            guard takeable else { return nil }
            if job.state == .running, let lease, lease.owner != owner { job.crashes += 1 }
            let token = (s.tokens[id] ?? 0) + 1
            s.tokens[id] = token
            s.leases[id] = (owner, token, now + leaseMilliseconds)
            job.state = .running
            job.version += 1
            job.updatedAt = now
            s.jobs[id] = job
            return UploadClaim(
                job: Self.shown(s, job), lease: Lease(jobID: id, owner: owner, token: token, expiresAt: now + leaseMilliseconds),
                tail: s.tails[id] ?? [])
        }
    }

    public func recordUploadPart(_ part: RecordedPart, under lease: Lease) async throws -> [TailSegment] {
        try await recordUploadParts([part], under: lease)
    }

    public func recordUploadParts(_ parts: [RecordedPart], under lease: Lease) async throws -> [TailSegment] {
        let now = Int64(clock.now())
        return try state.withLock { s in
            try guardWrite(s, lease, "recordUploadPart")
            for part in parts {
                let previous = s.parts[lease.jobID]?[part.number]?.size ?? 0
                s.parts[lease.jobID, default: [:]][part.number] = part
                let transferred = (s.jobs[lease.jobID]?.bytesTransferred ?? 0) + part.size - previous
                s.jobs[lease.jobID]?.bytesTransferred = transferred
                s.jobs[lease.jobID]?.bytesCommitted = transferred
            }
            s.jobs[lease.jobID]?.bytesAt = now
            s.jobs[lease.jobID]?.updatedAt = now
            s.jobs[lease.jobID]?.version += 1
            s.partWrites += 1
            return s.tails.removeValue(forKey: lease.jobID) ?? []
        }
    }

    public func saveUploadTail(_ segments: [TailSegment], under lease: Lease) async throws -> [TailSegment] {
        let now = Int64(clock.now())
        return try state.withLock { s in
            try guardWrite(s, lease, "saveUploadTail")
            let before = s.tails[lease.jobID] ?? []
            s.tails[lease.jobID] = segments
            let parts = s.jobs[lease.jobID]?.bytesTransferred ?? 0
            s.jobs[lease.jobID]?.bytesCommitted = parts + segments.reduce(0) { $0 + $1.size }
            s.jobs[lease.jobID]?.bytesAt = now
            s.jobs[lease.jobID]?.updatedAt = now
            s.jobs[lease.jobID]?.version += 1
            return before.filter { !segments.contains($0) }
        }
    }

    public func releaseUpload(_ lease: Lease) async throws {
        let now = Int64(clock.now())
        try state.withLock { s in
            try beforeWrite("releaseUpload")
            guard owned(s, lease) else { return }
            s.jobs[lease.jobID]?.state = JobLifecycle.target(of: .releaseUpload)
            s.jobs[lease.jobID]?.bytesFlowing = 0
            s.jobs[lease.jobID]?.version += 1
            s.jobs[lease.jobID]?.updatedAt = now
            s.leases[lease.jobID] = nil
        }
    }

    /// Upload jobs whose bytes are all in and whose completion's lease lapsed (the instance
    /// completing them died), in id order, at most `limit`.
    public func strandedCompletions(limit: Int) async throws -> [String] {
        let now = Int64(clock.now())
        return state.withLock { s in
            s.jobs.values.filter { job in
                job.kind == .upload && job.state == .running && job.completing && job.bytesTotal == job.bytesCommitted
                    && (s.leases[job.id]?.expiresAt ?? 0) < now
            }.map(\.id).sorted().prefix(limit).map { $0 }
        }
    }
}
