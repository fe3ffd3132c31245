import Foundation
import Gateway
import Testing
import TransferEngine

/// The job store's part in retries: a postponed job waits for its `retryAt` with what it had
/// done, and only a retryable failure is tried again, within its time.
extension JobStoreContract {
    static let aPostponedJobWaitsForItsRetryAtWithItsParts = ContractCase<StoreFixture>(
        "postpone sends a running job back to queued until its retryAt, with its parts, upload and lastError; a part resets its waits"
    ) { f in
        let made = try await f.jobs.insert(job(f.owner("alice")))
        let (_, lease) = try await claimNext(f)
        try await f.jobs.start(lease, uploadID: "kept", partsTotal: 2, partSize: 5 << 20, bytesTotal: 10 << 20, sourceETag: nil)
        try await f.jobs.recordPart(part(1, 5 << 20, "p1"), under: lease)
        let now = Int64(try await f.now() * 1000)
        let lastError = JobFailure(.retriesExhausted, cause: .storageUnavailable)
        try await f.jobs.postpone(lease, until: now + 10_000, lastError: lastError)
        let waiting = try #require(try await f.jobs.job(id: made.id))
        #expect(waiting.state == .queued && waiting.error == nil && waiting.lastError == lastError && waiting.retries == 1)
        #expect(waiting.uploadID == "kept" && waiting.partsCompleted == 1 && waiting.bytesCommitted == 5 << 20)
        #expect(abs((waiting.retryAt ?? 0) - (now + 10_000)) < 1_000, "retryAt \(String(describing: waiting.retryAt)) vs \(now + 10_000)")
        // The lease is gone with the run; its holder writes nothing more.
        await #expect(throws: LeaseLost(jobID: made.id)) { _ = try await f.jobs.renew(lease, leaseMilliseconds: 60_000) }
        await #expect(throws: LeaseLost(jobID: made.id)) { try await f.jobs.postpone(lease, until: now, lastError: lastError) }
        // Not claimed, nor counted as waiting, before its time.
        #expect(try await f.jobs.claim(owner: "instance-2", leaseMilliseconds: 60_000) == nil)
        #expect(!(try await f.jobs.waitingOwners(limit: 100)).contains(f.owner("alice")))
        try await f.age(milliseconds: 10_500)
        let (again, second) = try await claimNext(f, instance: "instance-2")
        #expect(again.id == made.id && again.attempts == 2 && again.crashes == 0 && again.retries == 1)
        #expect(try await f.jobs.parts(of: made.id).map(\.number) == [1])
        // Another wait counts on; a part recorded starts the count again.
        try await f.jobs.postpone(second, until: now, lastError: lastError)
        #expect(try await f.jobs.job(id: made.id)?.retries == 2)
        let (_, third) = try await claimNext(f, instance: "instance-3")
        try await f.jobs.recordPart(part(2, 5 << 20, "p2"), under: third)
        #expect(try await f.jobs.job(id: made.id)?.retries == 0)
        // Pause and resume of a waiting job make it runnable at once.
        try await f.jobs.postpone(third, until: now + 3_600_000, lastError: lastError)
        _ = try await f.jobs.transition(id: made.id, .pause)
        #expect(try await f.jobs.transition(id: made.id, .resume)?.retryAt == nil)
        #expect(try await claimNext(f).0.id == made.id)
    }

    static let onlyARetryableFailureIsRetriedWithinItsTime = ContractCase<StoreFixture>(
        "retry takes a job failed retryably, within its time and its owner's quota, back to wait with its parts; anything else stays"
    ) { f in
        let alice = f.owner("alice")
        // Failed retryably: its upload is in use still, and a retry takes it back to queued.
        let made = try await f.jobs.insert(job(alice, key: f.key("retry")))
        let (_, lease) = try await claimNext(f)
        try await f.jobs.start(lease, uploadID: "kept-for-retry", partsTotal: 2, partSize: 5 << 20, bytesTotal: 10 << 20, sourceETag: nil)
        try await f.jobs.recordPart(part(1, 5 << 20, "p1"), under: lease)
        let failure = JobFailure(.stalled, retryable: true)
        try await f.jobs.finish(lease, state: .failed, etag: nil, error: failure)
        #expect(try await f.jobs.job(id: made.id)?.error == failure)
        #expect(try await f.jobs.uploadIDsInUse(key: f.key("retry")).contains("kept-for-retry"))
        // Too long ago: refused.
        let now = Int64(try await f.now() * 1000)
        #expect(try await f.jobs.retry(id: made.id, failedSince: now + 60_000, quota: nil)?.state == .failed)
        // Over the quota of active jobs: refused, nothing changed.
        let quota = OwnerQuota(maxActiveJobs: 1, maxOpenUploads: 8)
        let other = try await f.jobs.insert(job(alice))
        await #expect(throws: QuotaExceeded(limit: .activeJobs, maximum: 1)) {
            _ = try await f.jobs.retry(id: made.id, failedSince: now - 60_000, quota: quota)
        }
        #expect(try await f.jobs.job(id: made.id)?.state == .failed)
        _ = try await f.jobs.transition(id: other.id, .cancel)
        let retried = try #require(try await f.jobs.retry(id: made.id, failedSince: now - 60_000, quota: quota))
        #expect(retried.state == .queued && retried.error == nil && retried.lastError == failure && retried.completedAt == nil)
        #expect(retried.uploadID == "kept-for-retry" && retried.partsCompleted == 1 && retried.retryAt == nil)
        // Waiting already: a second retry changes nothing.
        let twice = try #require(try await f.jobs.retry(id: made.id, failedSince: now - 60_000, quota: nil))
        #expect(twice.state == .queued && twice.version == retried.version)
        // Failed for good, or canceled: never.
        _ = try await f.jobs.transition(id: made.id, .cancel)
        let forGood = try await f.jobs.insert(job(alice))
        let (_, goodLease) = try await claimNext(f)
        #expect(goodLease.jobID == forGood.id)
        try await f.jobs.finish(goodLease, state: .failed, etag: nil, error: JobFailure(.accessDenied))
        #expect(try await f.jobs.retry(id: forGood.id, failedSince: now - 60_000, quota: nil)?.state == .failed)
        let canceled = try await f.jobs.insert(job(alice))
        _ = try await f.jobs.transition(id: canceled.id, .cancel)
        #expect(try await f.jobs.retry(id: canceled.id, failedSince: 0, quota: nil)?.state == .canceled)
        #expect(try await f.jobs.retry(id: UUID().uuidString.lowercased(), failedSince: 0, quota: nil) == nil)
        // An upload job goes back to waiting for its bytes.
        let upload = try await f.jobs.insert(job(alice, .upload))
        let claim = try #require(try await f.jobs.claimUpload(id: upload.id, owner: "instance-1", leaseMilliseconds: 60_000))
        try await f.jobs.finish(claim.lease, state: .failed, etag: nil, error: JobFailure(.jobTimeout, retryable: true))
        #expect(try await f.jobs.retry(id: upload.id, failedSince: now - 60_000, quota: nil)?.state == .pending)
    }
}
