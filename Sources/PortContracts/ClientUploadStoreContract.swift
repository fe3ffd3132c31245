import Foundation
import Gateway
import Testing
import TransferEngine

/// The client-upload store's contract (`ClientUploadStore`), as PostgreSQL keeps it:
/// `InMemoryClientUploadStore` must behave the same. Run by `ClientUploadStoreContractTests`
/// (the twin) and `ClientUploadStoreContractLiveTests` (PostgreSQL).
public enum ClientUploadStoreContract {
    /// Every case, in the order they are listed.
    public static let cases: [ContractCase<StoreFixture>] = [
        beginRecordsCreating, completeAndAbortClaimAnOpenUploadOnce, openUploadsAreBoundedPerIdentity,
        theOpenListingIsNewestFirstByCursor, idleUploadsAreThoseUntouchedSinceTheCutoff, aClaimLeftByADeadRequestIsTakenOver,
        signedChecksumsAreKeptAndTheCompletionsChecksumRecorded,
    ]

    /// A client upload of `owner` on `key`. Every upload of the suite is made here.
    static func upload(_ owner: String, key: String) -> ClientUpload {
        ClientUpload(
            id: UUID().uuidString.lowercased(), owner: owner, objectKey: key, s3UploadID: nil, size: 12 << 20,
            partSize: 5 << 20, partCount: 3, state: .creating)
    }

    /// A quota no case reaches unless it means to.
    static let roomy = OwnerQuota(maxActiveJobs: 100, maxOpenUploads: 100)

    /// Begins `upload` and opens it with S3 upload id `s3-<id>`.
    static func open(_ f: StoreFixture, _ upload: ClientUpload) async throws {
        try await f.clientUploads.begin(upload, quota: roomy)
        try await f.clientUploads.opened(id: upload.id, s3UploadID: "s3-\(upload.id)")
    }

    static func state(_ f: StoreFixture, _ id: String) async throws -> ClientUpload.State? {
        try await f.clientUploads.upload(id: id)?.state
    }

    static let beginRecordsCreating = ContractCase<StoreFixture>(
        "begin records an upload `creating` with no S3 upload, whatever the caller filled in; opened makes it `open`"
    ) { f in
        var made = upload(f.owner("alice"), key: f.key("a.bin"))
        made.state = .open
        made.s3UploadID = "too-early"
        made.etag = "\"e\""
        try await f.clientUploads.begin(made, quota: roomy)
        let read = try #require(try await f.clientUploads.upload(id: made.id))
        #expect(read.state == .creating && read.s3UploadID == nil && read.etag == nil)
        #expect(read.id == made.id && read.owner == made.owner && read.objectKey == made.objectKey)
        #expect(read.size == made.size && read.partSize == made.partSize && read.partCount == made.partCount && read.createdAt > 0)
        #expect(try await f.clientUploads.upload(id: UUID().uuidString.lowercased()) == nil)
        var again = upload(f.owner("bob"), key: f.key("b.bin"))
        again.id = made.id
        await #expect(throws: (any Error).self) { try await f.clientUploads.begin(again, quota: roomy) }
        #expect(try await f.clientUploads.upload(id: made.id)?.owner == made.owner)
        try await f.clientUploads.opened(id: made.id, s3UploadID: "s3-a")
        let opened = try #require(try await f.clientUploads.upload(id: made.id))
        #expect(opened.state == .open && opened.s3UploadID == "s3-a" && opened.createdAt == read.createdAt)
    }

    static let completeAndAbortClaimAnOpenUploadOnce = ContractCase<StoreFixture>(
        "complete and abort each claim an open upload, one of them at a time; a claim given back reopens it"
    ) { f in
        let alice = f.owner("alice")
        let made = upload(alice, key: f.key("c.bin"))
        try await f.clientUploads.begin(made, quota: roomy)
        #expect(try await !f.clientUploads.claim(id: made.id, for: .completing), "creating: not open yet")
        try await f.clientUploads.opened(id: made.id, s3UploadID: "s3-c")
        #expect(try await f.clientUploads.claim(id: made.id, for: .completing))
        #expect(try await !f.clientUploads.claim(id: made.id, for: .aborting), "the completion holds it")
        #expect(try await state(f, made.id) == .completing)
        try await f.clientUploads.unclaim(id: made.id)
        #expect(try await state(f, made.id) == .open)
        #expect(try await f.clientUploads.claim(id: made.id, for: .aborting))
        #expect(try await !f.clientUploads.claim(id: made.id, for: .completing))
        try await f.clientUploads.completed(id: made.id, etag: "\"not-completing\"")
        #expect(try await state(f, made.id) == .aborting, "only a claimed completion completes")
        try await f.clientUploads.unclaim(id: made.id)
        #expect(try await f.clientUploads.claim(id: made.id, for: .completing))
        try await f.clientUploads.completed(id: made.id, etag: "\"whole-3\"")
        let done = try #require(try await f.clientUploads.upload(id: made.id))
        #expect(done.state == .completed && done.etag == "\"whole-3\"")
        #expect(try await !f.clientUploads.aborted(id: made.id), "a completed upload stays completed")
        try await f.clientUploads.unclaim(id: made.id)
        #expect(try await state(f, made.id) == .completed)
        #expect(try await !f.clientUploads.claim(id: made.id, for: .aborting))

        // Aborted from every state but the ends.
        for setUp in ["creating", "open", "completing", "aborting"] {
            let other = upload(alice, key: f.key("\(setUp).bin"))
            try await f.clientUploads.begin(other, quota: roomy)
            if setUp != "creating" { try await f.clientUploads.opened(id: other.id, s3UploadID: "s3-\(setUp)") }
            if setUp == "completing" { _ = try await f.clientUploads.claim(id: other.id, for: .completing) }
            if setUp == "aborting" { _ = try await f.clientUploads.claim(id: other.id, for: .aborting) }
            #expect(try await f.clientUploads.aborted(id: other.id), "from \(setUp)")
            #expect(try await state(f, other.id) == .aborted, "from \(setUp)")
            #expect(try await !f.clientUploads.aborted(id: other.id), "aborted twice")
        }
        #expect(try await !f.clientUploads.aborted(id: UUID().uuidString.lowercased()))
    }

    /// Half of the rule `InMemoryClientUploadStore` once broke: its identity's upload jobs not
    /// ended count against the same quota.
    static let openUploadsAreBoundedPerIdentity = ContractCase<StoreFixture>(
        "an identity's uploads creating or open are bounded by its quota, upload jobs not ended among them"
    ) { f in
        let alice = f.owner("alice"), bob = f.owner("bob")
        let quota = OwnerQuota(maxActiveJobs: 1, maxOpenUploads: 2)
        let a = upload(alice, key: f.key("a")), b = upload(alice, key: f.key("b")), c = upload(alice, key: f.key("c"))
        try await f.clientUploads.begin(a, quota: quota)
        try await f.clientUploads.begin(b, quota: quota)
        await #expect(throws: QuotaExceeded(limit: .openUploads, maximum: 2)) { try await f.clientUploads.begin(c, quota: quota) }
        #expect(try await f.clientUploads.upload(id: c.id) == nil, "a refused upload is not recorded")
        try await f.clientUploads.begin(upload(bob, key: f.key("bob")), quota: quota)
        // Claimed for completion or abort, an upload no longer counts.
        try await f.clientUploads.opened(id: a.id, s3UploadID: "s3-a")
        #expect(try await f.clientUploads.claim(id: a.id, for: .aborting))
        try await f.clientUploads.begin(c, quota: quota)
        #expect(try await f.clientUploads.aborted(id: b.id))
        // One client upload and one upload job fill alice's two places (jobs are not checked
        // against maxActiveJobs here: that quota is the job store's).
        try await f.jobs.insert(JobStoreContract.job(alice, .upload), quota: nil)
        let refused = upload(alice, key: f.key("d"))
        await #expect(throws: QuotaExceeded(limit: .openUploads, maximum: 2)) { try await f.clientUploads.begin(refused, quota: quota) }
        let ended = try #require(try await f.jobs.list(owner: alice, state: .pending, kind: .upload, limit: 1, after: nil).first)
        _ = try await f.jobs.transition(id: ended.id, .cancel)
        try await f.clientUploads.begin(refused, quota: quota)
    }

    static let theOpenListingIsNewestFirstByCursor = ContractCase<StoreFixture>(
        "an identity's open uploads are listed newest first, a page at a time after a cursor"
    ) { f in
        let alice = f.owner("alice"), bob = f.owner("bob")
        var made: [ClientUpload] = []
        for index in 0..<4 {
            let next = upload(alice, key: f.key("\(index)"))
            if index == 2 { try await f.clientUploads.begin(next, quota: roomy) } else { try await open(f, next) }
            made.append(next)
            try await f.age(milliseconds: 5)
        }
        let bobs = upload(bob, key: f.key("bob"))
        try await open(f, bobs)
        func ids(_ owner: String, limit: Int = 10, after: String? = nil) async throws -> [String] {
            try await f.clientUploads.open(owner: owner, limit: limit, after: after).map(\.id)
        }
        #expect(try await ids(alice) == [made[3].id, made[1].id, made[0].id], "the one still creating is not listed")
        #expect(try await ids(alice, limit: 2) == [made[3].id, made[1].id])
        #expect(try await ids(alice, limit: 2, after: made[1].id) == [made[0].id])
        #expect(try await ids(alice, after: made[0].id).isEmpty)
        #expect(try await ids(alice, after: made[2].id) == [made[1].id, made[0].id], "an upload not listed still marks a place")
        #expect(try await ids(alice, after: UUID().uuidString.lowercased()).isEmpty, "a cursor naming no upload lists nothing")
        #expect(try await ids(bob) == [bobs.id])
        #expect(try await f.clientUploads.claim(id: made[3].id, for: .completing))
        #expect(try await ids(alice, limit: 1) == [made[1].id])
    }

    static let aClaimLeftByADeadRequestIsTakenOver = ContractCase<StoreFixture>(
        "a completion claimed long ago and never finished (its request died) is taken over by the next completion, not by an abort"
    ) { f in
        let made = upload(f.owner("alice"), key: f.key("stale.bin"))
        try await Self.open(f, made)
        #expect(try await f.clientUploads.claim(id: made.id, for: .completing))
        #expect(try await !f.clientUploads.claim(id: made.id, for: .completing), "held by a live request")
        try await f.age(milliseconds: (ClientUpload.staleClaimSeconds + 5) * 1000)
        #expect(try await !f.clientUploads.claim(id: made.id, for: .aborting), "only a step of the same kind takes over")
        #expect(try await f.clientUploads.claim(id: made.id, for: .completing))
        #expect(try await !f.clientUploads.claim(id: made.id, for: .completing), "the taking over is a fresh claim")
        try await f.clientUploads.completed(id: made.id, etag: "\"e\"")
        try await f.age(milliseconds: (ClientUpload.staleClaimSeconds + 5) * 1000)
        #expect(try await !f.clientUploads.claim(id: made.id, for: .completing), "a completed upload is never claimed")
    }

    static let idleUploadsAreThoseUntouchedSinceTheCutoff = ContractCase<StoreFixture>(
        "idle uploads are those not ended, under the prefixes, untouched since the cutoff; opening, claiming and asking for parts touch"
    ) { f in
        let alice = f.owner("alice")
        let prefix = f.key("idle/"), elsewhere = f.key("elsewhere/")
        let open = upload(alice, key: prefix + "open"), creating = upload(alice, key: prefix + "creating")
        let completing = upload(alice, key: prefix + "completing"), completed = upload(alice, key: prefix + "completed")
        let aside = upload(alice, key: elsewhere + "open")
        try await Self.open(f, open)
        try await f.clientUploads.begin(creating, quota: roomy)
        try await Self.open(f, completing)
        _ = try await f.clientUploads.claim(id: completing.id, for: .completing)
        try await Self.open(f, completed)
        _ = try await f.clientUploads.claim(id: completed.id, for: .completing)
        try await f.clientUploads.completed(id: completed.id, etag: "\"e\"")
        try await Self.open(f, aside)
        try await f.age(milliseconds: 10_000)
        let cutoff = try await f.now() - 5
        let fresh = upload(alice, key: prefix + "fresh")
        try await Self.open(f, fresh)
        func idle(_ prefixes: [String]) async throws -> Set<String> {
            Set(try await f.clientUploads.idle(since: cutoff, prefixes: prefixes).map(\.id))
        }
        #expect(try await idle([prefix]) == [open.id, creating.id, completing.id])
        #expect(try await idle([prefix, elsewhere]) == [open.id, creating.id, completing.id, aside.id])
        #expect(try await idle([]).isEmpty)
        try await f.clientUploads.touch(id: open.id)
        try await f.clientUploads.opened(id: creating.id, s3UploadID: "s3-late")
        try await f.clientUploads.unclaim(id: completing.id)
        #expect(try await idle([prefix]).isEmpty, "touched, opened and given back just now")
    }
}

extension ClientUploadStoreContract {
    static let signedChecksumsAreKeptAndTheCompletionsChecksumRecorded = ContractCase<StoreFixture>(
        "checksums signed for a part are kept, two at most; a completion keeps the object's checksum and records it by key and ETag"
    ) { f in
        let key = f.key("checksummed-upload")
        var made = ClientUpload(
            id: UUID().uuidString.lowercased(), owner: f.owner("alice"), objectKey: key, s3UploadID: nil, size: 1 << 20,
            partSize: 5 << 20, partCount: 1, state: .creating, partChecksum: .crc32c)
        try await f.clientUploads.begin(made, quota: roomy)
        try await f.clientUploads.opened(id: made.id, s3UploadID: "s3-checksummed")
        #expect(try await f.clientUploads.upload(id: made.id)?.partChecksum == .crc32c)
        try await f.clientUploads.signed(id: made.id, partChecksums: [(1, "AAAAAA=="), (2, "yZRlqg==")])
        try await f.clientUploads.signed(id: made.id, partChecksums: [(1, "AAAAAA=="), (1, "BBBBBB==")])
        #expect(try await f.clientUploads.signedChecksums(id: made.id) == [1: ["AAAAAA==", "BBBBBB=="], 2: ["yZRlqg=="]])
        // Signing part 1 again and again: it is ambiguous already, and nothing more is kept.
        for n in 0..<5 { try await f.clientUploads.signed(id: made.id, partChecksums: [(1, "CCCCC\(n)==")]) }
        #expect(try await f.clientUploads.signedChecksums(id: made.id)[1]?.count == 2)
        #expect(try await f.clientUploads.claim(id: made.id, for: .completing))
        let checksum = ObjectChecksum(algorithm: .crc32c, value: "yZRlqg==")
        try await f.clientUploads.completed(id: made.id, etag: "\"u-1\"", checksum: checksum)
        made = try #require(try await f.clientUploads.upload(id: made.id))
        #expect(made.state == .completed && made.checksum == checksum)
        if let checksums = f.checksums { #expect(try await checksums.checksum(ofKey: key, etag: "\"u-1\"") == checksum) }
    }
}
