import Foundation
import Gateway
import Testing
import TransferEngine

/// The job store's part in upload jobs: the S3 uploads in use for a key, one request at a time
/// holding an upload job, and its committed bytes as its recorded parts and its tail.
extension JobStoreContract {
    static let uploadIDsInUseComeFromJobsAndClientUploads = ContractCase<StoreFixture>(
        "the upload ids in use on a key are those of its jobs not ended and of its client uploads open"
    ) { f in
        let alice = f.owner("alice")
        let key = f.key("in-use.bin")
        let made = try await f.jobs.insert(job(alice, key: key))
        try await f.age(milliseconds: 5)
        try await f.jobs.insert(job(alice, key: f.key("elsewhere.bin")))
        let (claimed, lease) = try await claimNext(f)
        #expect(claimed.id == made.id)
        try await f.jobs.start(lease, uploadID: "job-upload", partsTotal: 2, partSize: 5 << 20, bytesTotal: 10 << 20, sourceETag: nil)
        let (_, elsewhere) = try await claimNext(f)
        try await f.jobs.start(
            elsewhere, uploadID: "elsewhere-upload", partsTotal: 2, partSize: 5 << 20, bytesTotal: 10 << 20,
            sourceETag: nil)
        #expect(try await f.jobs.uploadIDsInUse(key: key) == ["job-upload"], "not another key's")
        let upload = clientUpload(alice, key: key)
        try await f.clientUploads.begin(upload, quota: OwnerQuota(maxActiveJobs: 8, maxOpenUploads: 8))
        #expect(try await f.jobs.uploadIDsInUse(key: key) == ["job-upload"], "creating: no S3 upload yet")
        try await f.clientUploads.opened(id: upload.id, s3UploadID: "client-upload")
        #expect(try await f.jobs.uploadIDsInUse(key: key) == ["job-upload", "client-upload"])
        try await f.jobs.finish(lease, state: .failed, etag: nil, error: failure(.invalidJob))
        #expect(try await f.jobs.uploadIDsInUse(key: key) == ["client-upload"])
        #expect(try await f.clientUploads.claim(id: upload.id, for: .completing))
        #expect(try await f.jobs.uploadIDsInUse(key: key).isEmpty, "only open client uploads")
        #expect(try await f.jobs.job(id: made.id)?.state == .failed)
    }

    static let anUploadJobIsHeldByOneRequestAtATime = ContractCase<StoreFixture>(
        "an upload job's lease is held by one request at a time; its instance may take it back, a lapsed one is taken over"
    ) { f in
        let alice = f.owner("alice")
        let copy = try await f.jobs.insert(job(alice))
        let made = try await f.jobs.insert(job(alice, .upload))
        #expect(try await f.jobs.claimUpload(id: copy.id, owner: "i1", leaseMilliseconds: 60_000) == nil, "not an upload")
        #expect(try await f.jobs.claimUpload(id: UUID().uuidString.lowercased(), owner: "i1", leaseMilliseconds: 60_000) == nil)
        let first = try #require(try await f.jobs.claimUpload(id: made.id, owner: "i1", leaseMilliseconds: 60_000))
        #expect(first.job.id == made.id && first.job.state == .running && first.tail.isEmpty && first.lease.owner == "i1")
        #expect(try await f.jobs.claimUpload(id: made.id, owner: "i2", leaseMilliseconds: 60_000) == nil, "held by i1")
        let again = try #require(try await f.jobs.claimUpload(id: made.id, owner: "i1", leaseMilliseconds: 60_000))
        #expect(again.lease.token != first.lease.token && again.job.crashes == 0, "i1's own stale lease, taken back")
        await #expect(throws: LeaseLost(jobID: made.id)) { _ = try await f.jobs.recordUploadPart(part(1, 10, "x"), under: first.lease) }
        _ = try await f.jobs.renew(again.lease, leaseMilliseconds: 60_000, flowing: 42)
        try await f.jobs.releaseUpload(again.lease)
        let released = try #require(try await f.jobs.job(id: made.id))
        #expect(released.state == .pending && released.bytesFlowing == 0)
        try await f.jobs.releaseUpload(again.lease)  // released already: no error
        let second = try #require(try await f.jobs.claimUpload(id: made.id, owner: "i2", leaseMilliseconds: 30_000))
        #expect(second.job.crashes == 0, "released, not lost")
        #expect(try await f.jobs.claimUpload(id: made.id, owner: "i3", leaseMilliseconds: 60_000) == nil)
        try await f.age(milliseconds: 31_000)
        let third = try #require(try await f.jobs.claimUpload(id: made.id, owner: "i3", leaseMilliseconds: 60_000))
        #expect(third.job.crashes == 1, "its holder died with the request")
        // Paused, the upload is not claimable until resumed.
        #expect(try await f.jobs.transition(id: made.id, .pause)?.state == .paused)
        #expect(try await f.jobs.claimUpload(id: made.id, owner: "i3", leaseMilliseconds: 60_000) == nil)
        #expect(try await f.jobs.transition(id: made.id, .resumeUpload)?.state == .pending)
        #expect(try await f.jobs.claimUpload(id: made.id, owner: "i4", leaseMilliseconds: 60_000) != nil)
        // A copy job is claimed, never an upload.
        #expect(try await claimNext(f).0.id == copy.id)
        #expect(try await f.jobs.claim(owner: "i5", leaseMilliseconds: 60_000) == nil)
    }

    static let anUploadsCommittedBytesArePartsAndTail = ContractCase<StoreFixture>(
        "an upload's committed bytes are its parts' and its tail's; a recorded part forgets the tail"
    ) { f in
        let made = try await f.jobs.insert(job(f.owner("alice"), .upload))
        let claim = try #require(try await f.jobs.claimUpload(id: made.id, owner: "i1", leaseMilliseconds: 60_000))
        let t1 = [TailSegment(offset: 0, size: 10, key: "tails/1")]
        let t2 = t1 + [TailSegment(offset: 10, size: 5, key: "tails/2")]
        let t3 = [TailSegment(offset: 0, size: 15, key: "tails/3")]
        #expect(try await f.jobs.saveUploadTail(t1, under: claim.lease).isEmpty)
        let tailed = try #require(try await f.jobs.job(id: made.id))
        #expect(tailed.bytesCommitted == 10 && tailed.bytesTransferred == 0)
        #expect(try await f.jobs.saveUploadTail(t2, under: claim.lease).isEmpty, "t1's piece is still listed")
        #expect(try await f.jobs.saveUploadTail(t3, under: claim.lease) == t2, "both pieces are no longer listed")
        #expect(try await f.jobs.job(id: made.id)?.bytesCommitted == 15)
        try await f.jobs.releaseUpload(claim.lease)
        try await f.age(milliseconds: 10)
        let next = try #require(try await f.jobs.claimUpload(id: made.id, owner: "i2", leaseMilliseconds: 60_000))
        #expect(next.tail == t3, "the next request continues from the tail")
        #expect(try await f.jobs.recordUploadPart(part(1, 100, "p1"), under: next.lease) == t3)
        let recorded = try #require(try await f.jobs.job(id: made.id))
        #expect(recorded.bytesCommitted == 100 && recorded.bytesTransferred == 100 && recorded.partsCompleted == 1)
        #expect(recorded.bytesAt > recorded.createdAt, "bytes arrived after the upload was made")
        #expect(try await f.jobs.recordUploadParts([part(2, 100, "p2"), part(3, 100, "p3")], under: next.lease).isEmpty)
        #expect(try await f.jobs.job(id: made.id)?.bytesCommitted == 300)
        #expect(try await f.jobs.parts(of: made.id).map(\.number) == [1, 2, 3])
        await #expect(throws: LeaseLost(jobID: made.id)) { _ = try await f.jobs.saveUploadTail(t1, under: claim.lease) }
        try await f.jobs.releaseUpload(next.lease)
        #expect(try await f.jobs.claimUpload(id: made.id, owner: "i3", leaseMilliseconds: 60_000)?.tail == [])
    }
}
