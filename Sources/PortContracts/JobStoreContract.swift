import Foundation
import Gateway
import Testing
import TransferEngine

/// The job store's contract (`JobStore` and `UploadJobStore`), as PostgreSQL keeps it:
/// `InMemoryJobStore` must behave the same in everything here. Run by
/// `JobStoreContractTests` (the twin) and `JobStoreContractLiveTests` (PostgreSQL).
///
/// In a live database a claim takes the oldest runnable job of the whole table: the live
/// suite runs one case at a time, with every other active job retired first.
public enum JobStoreContract {
    /// Every case, in the order they are listed.
    public static let cases: [ContractCase<StoreFixture>] = [
        insertStoresTheDescriptionOnly, anIDIsStoredOnce, activeJobsAreBoundedPerIdentity, openUploadsCountJobsAndClientUploads,
        claimsAreFairAcrossIdentities, aLapsedLeaseIsTakenOverAndTheStaleHolderWritesNothing, aLapsedLeaseNobodyTookCanBeRenewed,
        renewalsCarryProgressInFlight, partsCountOnceAndANewPlanForgetsThem, completingRefusesPauseAndCancel,
        finishEndsTheJobAndItsLease, transitionsFollowTheLifecycleTable, listingIsNewestFirstByCursor,
        uploadIDsInUseComeFromJobsAndClientUploads, anUploadJobIsHeldByOneRequestAtATime, anUploadsCommittedBytesArePartsAndTail,
        aPostponedJobWaitsForItsRetryAtWithItsParts, onlyARetryableFailureIsRetriedWithinItsTime,
        aCompletedJobKeepsItsObjectsChecksum,
    ]

    // MARK: the one place jobs are made and errors read

    /// A job of `kind` for `owner` as the API would create it (an upload waits for its bytes, the
    /// others are queued), with the source its type has. Every job of the suite is made here.
    static func job(_ owner: String, _ kind: Job.Kind = .copy, key: String = "contracts/object", bytesTotal: Int64? = 10 << 20) -> Job {
        let source: JobSource
        switch kind {
        case .upload: source = .uploaded(tusMetadata: nil)
        case .import: source = .url("https://files.example.com/contracts")
        case .copy, .download: source = .object(ObjectSource(key: "contracts/source", contentType: "text/plain"))
        }
        var options = JobOptions()
        options.contentType = "application/x-contract"
        return Job(
            id: UUID().uuidString.lowercased(), owner: owner, kind: kind, state: kind == .upload ? .pending : .queued,
            objectKey: key, source: source, options: options, bytesTotal: bytesTotal, partSize: 5 << 20)
    }

    /// The error a job is failed with, carrying `code`.
    static func failure(_ code: FailureCode) -> JobFailure { JobFailure(code) }

    /// The code of a failed job's error.
    static func code(of job: Job?) -> FailureCode? { job?.error?.code }

    /// Whether two jobs say the same of what to move: source and options.
    static func sameDescription(_ a: Job, _ b: Job) -> Bool { a.source == b.source && a.options == b.options }

    /// A client upload of `owner`, to count against the same quota as upload jobs.
    static func clientUpload(_ owner: String, key: String = "contracts/client-upload") -> ClientUpload {
        ClientUpload(
            id: UUID().uuidString.lowercased(), owner: owner, objectKey: key, s3UploadID: nil, size: 1 << 20, partSize: 5 << 20,
            partCount: 1, state: .creating)
    }

    static func part(_ number: Int, _ size: Int64, _ etag: String, checksum: String? = nil) -> RecordedPart {
        RecordedPart(number: number, size: size, etag: "\"\(etag)\"", checksum: checksum)
    }

    /// Claims the next runnable job, which must be there.
    static func claimNext(
        _ f: StoreFixture, instance: String = "instance-1", lease: Int64 = 60_000,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (Job, Lease) {
        try #require(try await f.jobs.claim(owner: instance, leaseMilliseconds: lease), "no job to claim", sourceLocation: sourceLocation)
    }

    // MARK: insert and quotas

    static let insertStoresTheDescriptionOnly = ContractCase<StoreFixture>(
        "insert stores a job's description and counters; a run's fields start as defaults"
    ) { f in
        var made = job(f.owner("alice"))
        made.etag = "\"e\""
        made.sourceETag = "\"s\""
        made.bytesTransferred = 3
        made.bytesCommitted = 4
        // Fields of a run, which a caller may have filled in: the store keeps none of them.
        made.uploadID = "u"
        made.partsTotal = 2
        made.partChecksum = .crc32c
        made.error = failure(.invalidJob)
        made.attempts = 5
        made.crashes = 2
        made.completing = true
        made.bytesFlowing = 7
        made.version = 9
        made.partsCompleted = 3
        made.completedAt = 1
        let inserted = try await f.jobs.insert(made, quota: nil)
        let read = try #require(try await f.jobs.job(id: made.id))
        #expect(read == inserted, "insert answers the job as a read does")
        #expect(read.id == made.id && read.owner == made.owner && read.kind == .copy && read.state == .queued)
        #expect(read.objectKey == made.objectKey && read.bytesTotal == made.bytesTotal && read.partSize == made.partSize)
        #expect(sameDescription(read, made))
        #expect(read.etag == "\"e\"" && read.sourceETag == "\"s\"" && read.bytesTransferred == 3 && read.bytesCommitted == 4)
        #expect(read.uploadID == nil && read.partsTotal == nil && read.partChecksum == nil && read.error == nil)
        #expect(read.attempts == 0 && read.crashes == 0 && !read.completing && read.bytesFlowing == 0)
        #expect(read.version == 1 && read.partsCompleted == 0 && read.completedAt == nil)
        #expect(read.createdAt > 0 && read.updatedAt == read.createdAt && read.bytesAt == read.createdAt)
        #expect(try await f.jobs.job(id: UUID().uuidString.lowercased()) == nil)
        // A job stored already ended has ended when it was stored.
        var ended = job(f.owner("alice"))
        ended.state = .completed
        let stored = try await f.jobs.insert(ended, quota: nil)
        #expect(stored.state == .completed && stored.completedAt != nil)
    }

    static let anIDIsStoredOnce = ContractCase<StoreFixture>(
        "a job id is stored once: a second insert of it fails and changes nothing"
    ) { f in
        let first = try await f.jobs.insert(job(f.owner("alice")), quota: nil)
        var again = job(f.owner("bob"), .import)
        again.id = first.id
        await #expect(throws: (any Error).self) { try await f.jobs.insert(again, quota: nil) }
        let read = try #require(try await f.jobs.job(id: first.id))
        #expect(read.owner == first.owner && read.kind == .copy)
    }

    static let activeJobsAreBoundedPerIdentity = ContractCase<StoreFixture>(
        "an identity's jobs not ended (pending, queued, running, paused) are bounded by its quota"
    ) { f in
        let alice = f.owner("alice"), bob = f.owner("bob")
        let quota = OwnerQuota(maxActiveJobs: 2, maxOpenUploads: 8)
        let first = try await f.jobs.insert(job(alice), quota: quota)
        let upload = try await f.jobs.insert(job(alice, .upload), quota: quota)
        await #expect(throws: QuotaExceeded(limit: .activeJobs, maximum: 2)) { try await f.jobs.insert(job(alice), quota: quota) }
        // Per identity, and only when a quota is given.
        try await f.jobs.insert(job(bob), quota: quota)
        let unbounded = try await f.jobs.insert(job(alice), quota: nil)
        // A paused job still counts; canceled ones do not.
        #expect(try await f.jobs.transition(id: upload.id, .pause)?.state == .paused)
        _ = try await f.jobs.transition(id: first.id, .cancel)
        _ = try await f.jobs.transition(id: unbounded.id, .cancel)
        try await f.jobs.insert(job(alice), quota: quota)
        await #expect(throws: QuotaExceeded(limit: .activeJobs, maximum: 2)) { try await f.jobs.insert(job(alice, .upload), quota: quota) }
        // Running counts too.
        let running = try #require(try await f.jobs.claim(owner: "instance-1", leaseMilliseconds: 60_000, excluding: [bob]))
        #expect(running.0.owner == alice && running.0.state == .running)
        await #expect(throws: QuotaExceeded(limit: .activeJobs, maximum: 2)) { try await f.jobs.insert(job(alice), quota: quota) }
    }

    /// The rule `InMemoryJobStore` once broke: PostgreSQL counts an identity's open uploads
    /// over both tables, the upload jobs not ended and the client uploads creating or open.
    static let openUploadsCountJobsAndClientUploads = ContractCase<StoreFixture>(
        "open uploads count upload jobs not ended and client uploads creating or open, together"
    ) { f in
        let alice = f.owner("alice")
        let quota = OwnerQuota(maxActiveJobs: 10, maxOpenUploads: 2)
        let uploadJob = try await f.jobs.insert(job(alice, .upload), quota: quota)
        try await f.clientUploads.begin(clientUpload(alice), quota: quota)
        await #expect(throws: QuotaExceeded(limit: .openUploads, maximum: 2)) { try await f.jobs.insert(job(alice, .upload), quota: quota) }
        // Other kinds are not uploads; client uploads are not active jobs.
        try await f.jobs.insert(job(alice, .copy), quota: quota)
        try await f.jobs.insert(job(alice, .import), quota: OwnerQuota(maxActiveJobs: 3, maxOpenUploads: 0))
        // The upload job ended: its place is free.
        _ = try await f.jobs.transition(id: uploadJob.id, .cancel)
        try await f.jobs.insert(job(alice, .upload), quota: quota)
        await #expect(throws: QuotaExceeded(limit: .openUploads, maximum: 2)) { try await f.jobs.insert(job(alice, .upload), quota: quota) }
    }

    // MARK: claims and leases

    static let claimsAreFairAcrossIdentities = ContractCase<StoreFixture>(
        "a claim takes the identity running fewest jobs first, then the oldest job; uploads are never claimed"
    ) { f in
        let alice = f.owner("alice"), bob = f.owner("bob")
        var mine: [Job] = []
        for _ in 0..<3 {
            mine.append(try await f.jobs.insert(job(alice)))
            try await f.age(milliseconds: 5)
        }
        let theirs = try await f.jobs.insert(job(bob))
        try await f.age(milliseconds: 5)
        try await f.jobs.insert(job(bob, .upload))
        #expect(Set(try await f.jobs.waitingOwners(limit: 10)) == [alice, bob])
        #expect(try await f.jobs.waitingOwners(limit: 1).count == 1)
        let (first, lease) = try await claimNext(f)
        #expect(first.id == mine[0].id, "nobody runs anything yet: the oldest job")
        #expect(first.state == .running && first.attempts == 1 && first.version == mine[0].version + 1)
        #expect(lease.jobID == first.id && lease.owner == "instance-1")
        #expect(try await claimNext(f).0.id == theirs.id, "alice runs one job, bob none")
        #expect(
            try await f.jobs.claim(owner: "instance-1", leaseMilliseconds: 60_000, excluding: [alice]) == nil,
            "alice passed over, and bob's upload is not claimable")
        #expect(try await claimNext(f).0.id == mine[1].id)
        #expect(try await claimNext(f).0.id == mine[2].id)
        #expect(try await f.jobs.claim(owner: "instance-1", leaseMilliseconds: 60_000) == nil)
        #expect(try await f.jobs.waitingOwners(limit: 10).isEmpty)
    }

    static let aLapsedLeaseIsTakenOverAndTheStaleHolderWritesNothing = ContractCase<StoreFixture>(
        "a lapsed lease is taken over with a crash counted, and its stale holder can write nothing"
    ) { f in
        let made = try await f.jobs.insert(job(f.owner("alice")))
        let (_, stale) = try await claimNext(f, instance: "stalled", lease: 30_000)
        try await f.jobs.recordPart(part(1, 100, "p1"), under: stale)
        #expect(try await f.jobs.claim(owner: "successor", leaseMilliseconds: 60_000) == nil, "the lease is still good")
        try await f.age(milliseconds: 31_000)
        let (taken, fresh) = try await claimNext(f, instance: "successor")
        #expect(taken.id == made.id && fresh.token != stale.token && fresh.owner == "successor")
        #expect(taken.crashes == 1 && taken.attempts == 2, "taken from a holder that neither finished nor released it")
        #expect(taken.partsCompleted == 1 && taken.bytesCommitted == 100, "the claim answers the job with its progress")
        await #expect(throws: LeaseLost(jobID: made.id)) { _ = try await f.jobs.renew(stale, leaseMilliseconds: 60_000) }
        await #expect(throws: LeaseLost(jobID: made.id)) { try await f.jobs.recordPart(part(2, 100, "stale"), under: stale) }
        await #expect(throws: LeaseLost(jobID: made.id)) {
            try await f.jobs.start(stale, uploadID: "stale", partsTotal: 1, partSize: 5 << 20, bytesTotal: 1, sourceETag: nil)
        }
        await #expect(throws: LeaseLost(jobID: made.id)) { try await f.jobs.beginCompleting(stale) }
        await #expect(throws: LeaseLost(jobID: made.id)) { try await f.jobs.finish(stale, state: .completed, etag: nil, error: nil) }
        try await f.jobs.release(stale)  // a stale release is no error, and changes nothing
        #expect(try await f.jobs.parts(of: made.id).map(\.etag) == ["\"p1\""])
        #expect(try await f.jobs.claim(owner: "third", leaseMilliseconds: 60_000) == nil, "the successor holds it")
        // Handed back, not lost: the next holder counts no crash.
        try await f.jobs.release(fresh)
        let (again, _) = try await claimNext(f, instance: "third")
        #expect(again.id == made.id && again.crashes == 1 && again.attempts == 3)
    }

    static let aLapsedLeaseNobodyTookCanBeRenewed = ContractCase<StoreFixture>(
        "a lapsed lease nobody took over yet is renewed, and then holds the job again"
    ) { f in
        let made = try await f.jobs.insert(job(f.owner("alice")))
        let (_, lease) = try await claimNext(f, lease: 1_000)
        try await f.age(milliseconds: 2_000)
        let renewed = try await f.jobs.renew(lease, leaseMilliseconds: 60_000)
        #expect(renewed.jobID == made.id && renewed.token == lease.token && renewed.expiresAt > lease.expiresAt)
        #expect(try await f.jobs.claim(owner: "other", leaseMilliseconds: 60_000) == nil)
    }

    static let renewalsCarryProgressInFlight = ContractCase<StoreFixture>(
        "a renewal carries the bytes in flight; the job's version moves only when they change"
    ) { f in
        let made = try await f.jobs.insert(job(f.owner("alice")))
        let (_, lease) = try await claimNext(f)
        try await f.age(milliseconds: 10)
        let claimed = try #require(try await f.jobs.job(id: made.id))
        _ = try await f.jobs.renew(lease, leaseMilliseconds: 60_000, flowing: 500)
        let moved = try #require(try await f.jobs.job(id: made.id))
        #expect(moved.bytesFlowing == 500 && moved.version == claimed.version + 1)
        #expect(moved.updatedAt == claimed.updatedAt, "a renewal is not a change of the job")
        _ = try await f.jobs.renew(lease, leaseMilliseconds: 60_000, flowing: 500)
        _ = try await f.jobs.renew(lease, leaseMilliseconds: 60_000)
        let same = try #require(try await f.jobs.job(id: made.id))
        #expect(same.bytesFlowing == 500 && same.version == moved.version)
    }

    static let partsCountOnceAndANewPlanForgetsThem = ContractCase<StoreFixture>(
        "parts count once each; a new plan forgets them; the job shows how many there are wherever it is read"
    ) { f in
        let alice = f.owner("alice")
        let made = try await f.jobs.insert(job(alice))
        let (_, lease) = try await claimNext(f)
        try await f.jobs.recordPart(part(1, 100, "a"), under: lease)
        try await f.jobs.recordPart(part(1, 100, "b"), under: lease)
        try await f.jobs.recordParts([part(3, 50, "c", checksum: "qn4G2w=="), part(2, 100, "d")], under: lease)
        #expect(try await f.jobs.parts(of: made.id) == [part(1, 100, "b"), part(2, 100, "d"), part(3, 50, "c", checksum: "qn4G2w==")])
        #expect(try await f.jobs.parts(of: UUID().uuidString.lowercased()).isEmpty)
        let read = try #require(try await f.jobs.job(id: made.id))
        #expect(read.bytesCommitted == 250 && read.bytesTransferred == 250 && read.partsCompleted == 3)
        #expect(try await f.jobs.list(owner: alice, state: nil, kind: nil, limit: 10, after: nil).first?.partsCompleted == 3)
        #expect(try await f.jobs.transition(id: made.id, .resume)?.partsCompleted == 3, "a refused transition answers the job too")
        try await f.jobs.start(
            lease, uploadID: "upload-2", partChecksum: .crc32c, partsTotal: 4, partSize: 5 << 20, bytesTotal: nil,
            sourceETag: "\"source\"")
        let planned = try #require(try await f.jobs.job(id: made.id))
        #expect(try await f.jobs.parts(of: made.id).isEmpty && planned.partsCompleted == 0)
        #expect(planned.bytesCommitted == 0 && planned.bytesTransferred == 0)
        #expect(planned.uploadID == "upload-2" && planned.partChecksum == .crc32c && planned.partsTotal == 4)
        #expect(planned.bytesTotal == nil && planned.sourceETag == "\"source\"" && planned.partSize == 5 << 20)
        try await f.jobs.recordPart(part(1, 70, "e"), under: lease)
        try await f.jobs.finish(lease, state: .completed, etag: "\"whole\"", error: nil)
        let done = try #require(try await f.jobs.job(id: made.id))
        #expect(done.state == .completed && done.etag == "\"whole\"" && done.bytesTotal == 70, "a streamed job's size is what it committed")
    }

    static let completingRefusesPauseAndCancel = ContractCase<StoreFixture>(
        "once a job begins completing, pause and cancel are refused; a job paused meanwhile cannot begin completing"
    ) { f in
        let made = try await f.jobs.insert(job(f.owner("alice")))
        let (_, lease) = try await claimNext(f)
        try await f.jobs.beginCompleting(lease)
        #expect(try await f.jobs.job(id: made.id)?.completing == true)
        #expect(try await f.jobs.transition(id: made.id, .pause)?.state == .running)
        #expect(try await f.jobs.transition(id: made.id, .cancel)?.state == .running)
        try await f.jobs.finish(lease, state: .completed, etag: "\"e\"", error: nil)
        #expect(try await f.jobs.job(id: made.id)?.state == .completed)

        let other = try await f.jobs.insert(job(f.owner("alice")))
        let (_, otherLease) = try await claimNext(f)
        #expect(try await f.jobs.transition(id: other.id, .pause)?.state == .paused)
        await #expect(throws: LeaseLost(jobID: other.id)) { try await f.jobs.beginCompleting(otherLease) }
        #expect(try await f.jobs.job(id: other.id)?.completing == false)
    }

    static let finishEndsTheJobAndItsLease = ContractCase<StoreFixture>(
        "finish ends a job completed or else failed, with its error, and its lease with it"
    ) { f in
        let made = try await f.jobs.insert(job(f.owner("alice")))
        let (_, lease) = try await claimNext(f)
        try await f.jobs.finish(lease, state: .failed, etag: nil, error: failure(.throttled))
        let failed = try #require(try await f.jobs.job(id: made.id))
        #expect(failed.state == .failed && code(of: failed) == .throttled && failed.completedAt != nil && failed.etag == nil)
        await #expect(throws: LeaseLost(jobID: made.id)) { _ = try await f.jobs.renew(lease, leaseMilliseconds: 60_000) }
        await #expect(throws: LeaseLost(jobID: made.id)) { try await f.jobs.finish(lease, state: .completed, etag: nil, error: nil) }
        #expect(try await f.jobs.claim(owner: "instance-2", leaseMilliseconds: 60_000) == nil)
        // Only `completed` completes: any other state asked for ends the job failed.
        let other = try await f.jobs.insert(job(f.owner("alice")))
        let (_, otherLease) = try await claimNext(f)
        try await f.jobs.finish(otherLease, state: .canceled, etag: nil, error: failure(.jobTimeout))
        #expect(try await f.jobs.job(id: other.id)?.state == .failed)
    }

    static let transitionsFollowTheLifecycleTable = ContractCase<StoreFixture>(
        "pause, resume, cancel and expire move a job as JobLifecycle's table says, and nothing else"
    ) { f in
        let alice = f.owner("alice")
        let actions: [JobLifecycle.Action] = [.pause, .resume, .resumeUpload, .cancel, .expire]
        for action in actions {
            for (kind, paused) in [(Job.Kind.copy, false), (.upload, false), (.copy, true), (.upload, true)] {
                let made = try await f.jobs.insert(job(alice, kind))
                if paused { _ = try await f.jobs.transition(id: made.id, .pause) }
                try await f.age(milliseconds: 5)
                let before = try #require(try await f.jobs.job(id: made.id))
                let after = try #require(try await f.jobs.transition(id: made.id, action))
                if JobLifecycle.allows(action, from: before.state) {
                    #expect(after.state == JobLifecycle.target(of: action), "\(action) from \(before.state)")
                    #expect(after.version == before.version + 1 && after.updatedAt > before.updatedAt, "\(action) from \(before.state)")
                    #expect((after.completedAt != nil) == after.state.isFinal, "\(action) from \(before.state)")
                } else {
                    #expect(
                        after.state == before.state && after.version == before.version && after.updatedAt == before.updatedAt,
                        "\(action) from \(before.state)")
                }
                #expect(try await f.jobs.job(id: made.id) == after, "the answer is the job as stored")
                _ = try await f.jobs.transition(id: made.id, .cancel)
            }
        }
        #expect(try await f.jobs.transition(id: UUID().uuidString.lowercased(), .pause) == nil)
    }

    static let listingIsNewestFirstByCursor = ContractCase<StoreFixture>(
        "an identity's jobs are listed newest first, by state and type, a page at a time after a cursor"
    ) { f in
        let alice = f.owner("alice"), bob = f.owner("bob")
        var made: [Job] = []
        for kind in [Job.Kind.copy, .import, .upload, .copy, .download] {
            made.append(try await f.jobs.insert(job(alice, kind)))
            try await f.age(milliseconds: 5)
        }
        let bobs = try await f.jobs.insert(job(bob))
        let newestFirst = made.reversed().map(\.id)
        func ids(
            state: Job.State? = nil, kind: Job.Kind? = nil, limit: Int = 10, after: String? = nil,
            owner: String? = nil
        ) async throws -> [String] {
            try await f.jobs.list(owner: owner ?? alice, state: state, kind: kind, limit: limit, after: after).map(\.id)
        }
        #expect(try await ids() == newestFirst)
        #expect(try await ids(limit: 2) == Array(newestFirst[0..<2]))
        #expect(try await ids(limit: 2, after: newestFirst[1]) == Array(newestFirst[2..<4]))
        #expect(try await ids(limit: 2, after: newestFirst[3]) == [newestFirst[4]])
        #expect(try await ids(limit: 2, after: newestFirst[4]).isEmpty)
        #expect(try await ids(kind: .copy) == [made[3].id, made[0].id])
        #expect(try await ids(state: .pending) == [made[2].id])
        #expect(try await ids(state: .queued, kind: .upload).isEmpty)
        #expect(try await ids(owner: bob) == [bobs.id])
        // A cursor is a position among all jobs: another identity's job or another state's marks one too.
        #expect(try await ids(kind: .copy, after: made[2].id) == [made[0].id])
        #expect(try await ids(after: UUID().uuidString.lowercased()).isEmpty, "a cursor naming no job lists nothing")
    }
}
