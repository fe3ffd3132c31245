import Adapters
import Crypto
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import TransferEngine

private let MiB = 1024 * 1024

private func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
    repeatingBytes(count, seed: seed, multiplier: 131, shift: 3)
}

/// Upload requests over the in-memory store and object store, each "instance" with its own
/// spool directory (instances share no disk), on a manual clock.
private struct Uploads {
    let clock = ManualClock()
    let store: InMemoryJobStore
    let objects: InMemoryObjectStore
    var settings = EngineSettings()

    init(objects: InMemoryObjectStore = InMemoryObjectStore(), beforeWrite: @escaping @Sendable (String) throws -> Void = { _ in }) {
        store = InMemoryJobStore(clock: clock, beforeWrite: beforeWrite)
        self.objects = objects
        settings.concurrency = 2
        settings.roomWaitMilliseconds = 2_000
    }

    func receiver(_ instance: String, spool: DirectorySpool? = nil) throws -> UploadReceiver {
        UploadReceiver(
            store: store, objects: objects,
            spool: try spool ?? DirectorySpool(directory: NSTemporaryDirectory() + "receiver-\(instance)-" + UUID().uuidString),
            settings: settings, instance: instance, clock: clock)
    }

    func insert(size: Int64?) async throws -> Job {
        try await store.insert(
            Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: .upload, state: .pending,
                objectKey: "private/alice/up.bin", source: .uploaded(tusMetadata: nil), bytesTotal: size, partSize: PartPlan.minimumPartSize
            ))
    }

    func send(
        _ receiver: UploadReceiver, _ job: Job, from offset: Int64, _ body: [UInt8], chunk: Int = 256 * 1024,
        checksum: UploadReceiver.Checksum? = nil
    ) async throws -> UploadReceiver.Outcome {
        let source = ChunkedBytes(bytes: body, chunk: chunk)
        return try await driving(clock) { try await receiver.receive(jobID: job.id, offset: offset, body: source, checksum: checksum) }
    }
}

@Suite struct UploadReceiverTests {
    /// Parts go to S3 from spool files, and the bytes past the last part are staged as an
    /// object the store lists: another instance, with a spool of its own, continues from it.
    @Test func aTailIsStagedAndAnotherInstanceContinuesFromIt() async throws {
        let uploads = Uploads()
        let body = bytes(12 * MiB + 77, seed: 1)
        let job = try await uploads.insert(size: Int64(body.count))
        let first = try await uploads.send(try uploads.receiver("a"), job, from: 0, Array(body[0..<(7 * MiB)]))
        #expect(first == .waiting(committed: 7 * Int64(MiB)))
        let tail = uploads.store.tail(of: job.id)
        #expect(tail.count == 1 && tail.first?.offset == 5 * Int64(MiB) && tail.first?.size == 2 * Int64(MiB))
        #expect(uploads.objects.keys(under: uploads.settings.stagingPrefix).count == 1)
        let second = try await uploads.send(try uploads.receiver("b"), job, from: 7 * Int64(MiB), Array(body[(7 * MiB)...]))
        guard case .completed(_, let size) = second else { Issue.record("\(second)"); return }
        #expect(size == Int64(body.count))
        #expect(uploads.objects.object("private/alice/up.bin") == body)
        #expect(uploads.objects.keys(under: uploads.settings.stagingPrefix).isEmpty, "staged tails are removed")
    }

    /// Parts whose turns come together are recorded in one write, and every whole part is
    /// recorded by the time the request is answered.
    @Test func partsSentTogetherAreRecordedTogether() async throws {
        let sixth = Atomic<Bool>(false)
        var uploads = Uploads(
            objects: InMemoryObjectStore(beforePart: { part in
                // The first five wait in flight until the sixth is on its way.
                if part == 6 { sixth.store(true, ordering: .releasing) }
                while !sixth.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
            }))
        uploads.settings.concurrency = 6
        uploads.settings.partSaveMilliseconds = .max / 4
        let body = bytes(6 * 5 * MiB + 10, seed: 8)
        let job = try await uploads.insert(size: Int64(body.count))
        let first = try await uploads.send(try uploads.receiver("a"), job, from: 0, Array(body[0..<(6 * 5 * MiB)]))
        #expect(first == .waiting(committed: 6 * 5 * Int64(MiB)))
        #expect(try await uploads.store.parts(of: job.id).map(\.number) == Array(1...6))
        // The first part is written at once; the other five wait for the last in flight.
        #expect(uploads.store.partWrites == 2)
        let last = try await uploads.send(try uploads.receiver("a"), job, from: 6 * 5 * Int64(MiB), Array(body[(6 * 5 * MiB)...]))
        guard case .completed = last else { Issue.record("\(last)"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
    }

    /// S3 away past the retries while parts go out: the request ends with the upload waiting
    /// at its recorded parts (its multipart upload kept), and once S3 is back the client sends
    /// the rest from there; the parts stored before the outage are not sent again.
    @Test func anOutageLeavesTheUploadWaitingAtItsRecordedParts() async throws {
        let outage = Atomic<Bool>(false)
        var uploads = Uploads(
            objects: InMemoryObjectStore(fault: { call, earlier in
                if call == .uploadPart(3) && earlier == 0 { outage.store(true, ordering: .releasing) }
                return outage.load(ordering: .acquiring) ? TransferError(code: .storageUnavailable, retryable: true) : nil
            }))
        uploads.settings.concurrency = 1
        uploads.settings.retryLimit = 1
        let body = bytes(4 * 5 * MiB + 123, seed: 4)
        let job = try await uploads.insert(size: Int64(body.count))
        let first = try await uploads.send(try uploads.receiver("a"), job, from: 0, body)
        #expect(first == .unavailable(committed: 2 * 5 * Int64(MiB)))
        let waiting = try #require(try await uploads.store.job(id: job.id))
        #expect(waiting.state == .pending && waiting.bytesCommitted == 2 * 5 * Int64(MiB) && waiting.error == nil)
        #expect(uploads.objects.openUploads == 1 && uploads.objects.count(.abort) == 0)
        outage.store(false, ordering: .releasing)
        let rest = try await uploads.send(try uploads.receiver("b"), job, from: 2 * 5 * Int64(MiB), Array(body[(2 * 5 * MiB)...]))
        guard case .completed = rest else { Issue.record("\(rest)"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
        #expect(uploads.objects.count(.uploadPart(1)) == 1 && uploads.objects.count(.uploadPart(2)) == 1)
    }

    /// The outage hits the last step (completion): the bytes are all committed, and a request
    /// with no body at that offset completes the object once S3 is back.
    @Test func anOutageAtCompletionIsFinishedByAnEmptyRequest() async throws {
        let outage = Atomic<Bool>(true)
        let uploads = Uploads(
            objects: InMemoryObjectStore(fault: { call, _ in
                call == .complete && outage.load(ordering: .acquiring) ? TransferError(code: .storageUnavailable, retryable: true) : nil
            }))
        let body = bytes(5 * MiB + 9, seed: 5)
        let job = try await uploads.insert(size: Int64(body.count))
        let first = try await uploads.send(try uploads.receiver("a"), job, from: 0, body)
        #expect(first == .unavailable(committed: Int64(body.count)))
        outage.store(false, ordering: .releasing)
        let last = try await uploads.send(try uploads.receiver("a"), job, from: Int64(body.count), [])
        guard case .completed = last else { Issue.record("\(last)"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
    }

    /// The same instance reuses its own tail file; a tail many requests long is merged.
    @Test func manySmallRequestsOnOneInstance() async throws {
        var uploads = Uploads()
        uploads.settings.maxTailSegments = 3
        let body = bytes(6 * MiB, seed: 2)
        let job = try await uploads.insert(size: Int64(body.count))
        let receiver = try uploads.receiver("a")
        var offset = 0
        for size in [100_000, 200_000, 300_000, 400_000, 500_000] {
            let outcome = try await uploads.send(receiver, job, from: Int64(offset), Array(body[offset..<(offset + size)]))
            offset += size
            #expect(outcome == .waiting(committed: Int64(offset)))
            #expect(uploads.store.tail(of: job.id).count <= 3)
        }
        let last = try await uploads.send(receiver, job, from: Int64(offset), Array(body[offset...]))
        guard case .completed = last else { Issue.record("\(last)"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
    }

    /// A request whose bytes do not match its checksum keeps nothing, even across a part.
    @Test func aChecksumMismatchKeepsNothing() async throws {
        let uploads = Uploads()
        let body = bytes(7 * MiB, seed: 3)
        let job = try await uploads.insert(size: 20 * Int64(MiB))
        let wrong = UploadReceiver.Checksum(algorithm: .sha1, expected: Digest.sha1(bytes(7 * MiB, seed: 4)))
        let refused = try await uploads.send(try uploads.receiver("a"), job, from: 0, body, checksum: wrong)
        #expect(refused == .checksumMismatch(committed: 0))
        #expect(try await uploads.store.parts(of: job.id).isEmpty && uploads.store.tail(of: job.id).isEmpty)
        #expect(try await uploads.store.job(id: job.id)?.bytesCommitted == 0)
        let right = UploadReceiver.Checksum(algorithm: .sha1, expected: Digest.sha1(body))
        let kept = try await uploads.send(try uploads.receiver("a"), job, from: 0, body, checksum: right)
        #expect(kept == .waiting(committed: 7 * Int64(MiB)))
        #expect(try await uploads.store.parts(of: job.id).count == 1)
    }

    /// A part (or a one-part object) is sent with the CRC-32C its bytes were summed to as they
    /// arrived, not one read back from its spool file: a file that changed on the spool's disk
    /// before it went out is refused by the store, and the job fails with checksum_mismatch.
    @Test(arguments: [(size: 7 * MiB, call: InMemoryObjectStore.Call.uploadPart(1), file: "part-1"), (3 * MiB, .putObject, "tail")])
    func aSpoolFileThatChangedIsRefused(size: Int, call: InMemoryObjectStore.Call, file: String) async throws {
        let directory = NSTemporaryDirectory() + "receiver-flip-" + UUID().uuidString
        let jobID = Mutex<String>("")
        let uploads = Uploads(
            objects: InMemoryObjectStore(fault: { made, earlier in
                // The disk gives one byte back changed, just before the file is sent.
                if made == call && earlier == 0 { Self.flipFirstByte(of: directory + "/" + jobID.withLock { $0 } + "." + file) }
                return nil
            }))
        let body = bytes(size, seed: 9)
        let job = try await uploads.insert(size: Int64(size))
        jobID.withLock { $0 = job.id }
        let outcome = try await uploads.send(try uploads.receiver("a", spool: DirectorySpool(directory: directory)), job, from: 0, body)
        #expect(outcome == .failed(code: .checksumMismatch, committed: 0))
        #expect(uploads.objects.keys(under: "private/alice/").isEmpty, "nothing was stored")
        #expect(try await uploads.store.job(id: job.id)?.state == .failed)
    }

    private static func flipFirstByte(of path: String) {
        let fd = open(path, O_RDWR)
        precondition(fd >= 0, "no file \(path)")
        defer { close(fd) }
        var byte: UInt8 = 0
        precondition(pread(fd, &byte, 1, 0) == 1)
        byte ^= 0xFF
        precondition(pwrite(fd, &byte, 1, 0) == 1)
    }

    /// With no room on the spool for more bytes, the request stops reading and says so; what
    /// arrived before is kept (the tail reserves a chunk at a time, so the first chunk fitted).
    @Test func noRoomOnTheSpoolIsAnsweredNotWaitedOutForEver() async throws {
        var uploads = Uploads()
        // Long enough (in clock time) for the request's own part to reach S3 and free its room.
        uploads.settings.roomWaitMilliseconds = 120_000
        let spool = try DirectorySpool(directory: NSTemporaryDirectory() + "receiver-full-" + UUID().uuidString, budget: 6 * Int64(MiB))
        try await spool.reserve(jobID: "someone-else", name: .tail, bytes: 5 * Int64(MiB), owner: "someone-else")
        let job = try await uploads.insert(size: 12 * Int64(MiB))
        let outcome = try await uploads.send(try uploads.receiver("a", spool: spool), job, from: 0, bytes(12 * MiB, seed: 5))
        #expect(outcome == .noRoom(committed: Int64(MiB)), "the chunk that fitted is kept")
        #expect(try await uploads.store.job(id: job.id)?.state == .pending, "the upload waits for the client to try again")
        spool.remove(jobID: "someone-else", name: .tail)
        let rest = Array(bytes(12 * MiB, seed: 5)[MiB...])
        let resumed = try await uploads.send(try uploads.receiver("a", spool: spool), job, from: Int64(MiB), rest)
        guard case .completed = resumed else { Issue.record("\(resumed)"); return }
        #expect(spool.usage.used == 0, "nothing stays reserved once the upload is complete")
    }

    /// Crash between steps: a request that dies as it records its second part leaves the
    /// upload at its first part; after the lease lapses any instance continues from there.
    @Test func aCrashWhileRecordingLeavesAPrefixAnotherInstanceContinues() async throws {
        struct Crash: Error {}
        let records = Atomic<Int>(0)
        let crashing = Atomic<Bool>(true)
        let uploads = Uploads(beforeWrite: { what in
            if what == "recordUploadPart", crashing.load(ordering: .relaxed), records.add(1, ordering: .relaxed).newValue == 2 {
                throw Crash()
            }
        })
        let body = bytes(14 * MiB, seed: 6)
        let job = try await uploads.insert(size: Int64(body.count))
        await #expect(throws: Crash.self) { _ = try await uploads.send(try uploads.receiver("a"), job, from: 0, body) }
        crashing.store(false, ordering: .relaxed)
        let cut = try #require(try await uploads.store.job(id: job.id))
        #expect(cut.bytesCommitted == 5 * Int64(MiB) && cut.state == .running)
        // Another instance must wait for the dead request's lease to lapse.
        #expect(try await uploads.send(try uploads.receiver("b"), job, from: cut.bytesCommitted, Array(body[(5 * MiB)...])) == .busy)
        uploads.store.expireLease(job.id)
        let done = try await uploads.send(try uploads.receiver("b"), job, from: cut.bytesCommitted, Array(body[(5 * MiB)...]))
        guard case .completed = done else { Issue.record("\(done)"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
        #expect(try await uploads.store.job(id: job.id)?.crashes == 1)
    }

    /// Crash between steps: dying after the tail object is written but before the store lists
    /// it leaves the upload where it was; the orphan object is not part of it.
    @Test func aCrashBeforeTheTailIsListedLosesNothingCommitted() async throws {
        struct Crash: Error {}
        let crashing = Atomic<Bool>(true)
        let uploads = Uploads(beforeWrite: { what in
            if what == "saveUploadTail", crashing.load(ordering: .relaxed) { throw Crash() }
        })
        let body = bytes(8 * MiB, seed: 7)
        let job = try await uploads.insert(size: Int64(body.count))
        await #expect(throws: Crash.self) {
            _ = try await uploads.send(try uploads.receiver("a"), job, from: 0, Array(body[0..<(6 * MiB)]))
        }
        crashing.store(false, ordering: .relaxed)
        uploads.store.expireLease(job.id)
        let committed = try #require(try await uploads.store.job(id: job.id)).bytesCommitted
        #expect(committed == 5 * Int64(MiB), "the part counts, the unlisted tail does not")
        let done = try await uploads.send(try uploads.receiver("b"), job, from: committed, Array(body[(5 * MiB)...]))
        guard case .completed = done else { Issue.record("\(done)"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
    }

    /// A crash after the object is written but before the job is finished (its instance died):
    /// the bytes are all committed, so the client's next request is an empty one at the full
    /// offset, and it finishes the job with the object that is there — never writes it again
    /// from the nothing it holds. One PutObject, and a completed multipart upload, alike.
    @Test(arguments: [3 * MiB + 5, 11 * MiB + 3])
    func aCrashAfterTheObjectIsWrittenIsFinishedWithThatObject(size: Int) async throws {
        struct Crash: Error {}
        let crashing = Atomic<Bool>(true)
        let uploads = Uploads(beforeWrite: { what in
            if what == "finish", crashing.load(ordering: .relaxed) { throw Crash() }
        })
        let body = bytes(size, seed: 8)
        let job = try await uploads.insert(size: Int64(body.count))
        await #expect(throws: Crash.self) { _ = try await uploads.send(try uploads.receiver("a"), job, from: 0, body) }
        crashing.store(false, ordering: .relaxed)
        uploads.store.expireLease(job.id)
        let cut = try #require(try await uploads.store.job(id: job.id))
        #expect(cut.bytesCommitted == Int64(size) && cut.state == .running && cut.completing)
        #expect(uploads.objects.object("private/alice/up.bin")?.elementsEqual(body) == true, "S3 holds the object")
        let done = try await uploads.send(try uploads.receiver("b"), job, from: Int64(size), [])
        guard case .completed(_, let doneSize) = done else { Issue.record("\(done)"); return }
        #expect(doneSize == Int64(size))
        let now = uploads.objects.object("private/alice/up.bin") ?? []
        #expect(now.count == size && now.elementsEqual(body), "the object is the one written, not \(now.count) bytes")
        #expect(try await uploads.store.job(id: job.id)?.state == .completed)
    }

    /// The same crash with no client coming back (a tus client whose HEAD showed the whole
    /// length has nothing left to send): the finisher finishes the job once the dead request's
    /// lease lapses, and leaves alone one whose request may still be at it.
    @Test func theFinisherFinishesAnUploadStrandedAtCompletion() async throws {
        struct Crash: Error {}
        let crashing = Atomic<Bool>(true)
        let uploads = Uploads(beforeWrite: { what in
            if what == "finish", crashing.load(ordering: .relaxed) { throw Crash() }
        })
        let body = bytes(2 * MiB + 1, seed: 9)
        let job = try await uploads.insert(size: Int64(body.count))
        await #expect(throws: Crash.self) { _ = try await uploads.send(try uploads.receiver("a"), job, from: 0, body) }
        crashing.store(false, ordering: .relaxed)
        let finisher = UploadFinisher(store: uploads.store, receiver: try uploads.receiver("b"))
        #expect(await finisher.finishStranded() == 0, "the lease still holds: its request may be at it")
        uploads.store.expireLease(job.id)
        #expect(try await uploads.store.strandedCompletions(limit: 10) == [job.id])
        #expect(try await driving(uploads.clock) { await finisher.finishStranded() } == 1)
        #expect(try await uploads.store.job(id: job.id)?.state == .completed)
        #expect(uploads.objects.object("private/alice/up.bin")?.elementsEqual(body) == true)
        #expect(try await uploads.store.strandedCompletions(limit: 10).isEmpty)
    }

    /// A pause while the request streams ends it at once with what is committed.
    @Test func aPauseEndsTheRequest() async throws {
        let uploads = Uploads()
        let job = try await uploads.insert(size: 40 * Int64(MiB))
        let store = uploads.store
        let slow = SlowBody(clock: uploads.clock)
        Task {
            while slow.sent.load(ordering: .relaxed) < 3 { try await Task.sleep(for: .milliseconds(1)) }
            _ = try await store.transition(id: job.id, .pause)
        }
        let receiver = try uploads.receiver("a")
        let outcome = try await driving(uploads.clock) { try await receiver.receive(jobID: job.id, offset: 0, body: slow) }
        guard case .paused = outcome else { Issue.record("\(outcome)"); return }
        #expect(slow.sent.load(ordering: .relaxed) < 100)
    }
}

/// A client body that sends 64 KiB each second of the manual clock, for ever.
private final class SlowBody: ByteSource {
    let clock: ManualClock
    let sent = Atomic<Int>(0)
    init(clock: ManualClock) { self.clock = clock }

    func next() async throws -> ArraySlice<UInt8>? {
        try await clock.sleep(milliseconds: 1000)
        sent.add(1, ordering: .relaxed)
        return [UInt8](repeating: 1, count: 64 * 1024)[...]
    }
}

/// A body that hands out `first`, then waits until `open()` before it ends: a client that sent
/// a little and stalled.
private final class StalledBody: ByteSource {
    private struct State {
        var sent = false
        var waiter: CheckedContinuation<Void, Never>?
        var opened = false
    }
    private let first: [UInt8]
    private let state = Mutex(State())

    init(_ first: [UInt8]) { self.first = first }

    var stalled: Bool { state.withLock { $0.sent && $0.waiter != nil } }

    func next() async throws -> ArraySlice<UInt8>? {
        let send = state.withLock { s -> Bool in
            defer { s.sent = true }
            return !s.sent
        }
        if send { return first[...] }
        await withCheckedContinuation { continuation in
            let now = state.withLock { s -> Bool in
                if s.opened { return true }
                s.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        return nil
    }

    func open() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.opened = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }
}

@Suite struct UploadSpoolGrowthTests {
    /// A request that sends 1,000 bytes of a 5 GiB-part upload and stalls holds one chunk of the
    /// spool, not a part: its reservation grows with the bytes actually written.
    @Test func aStalledRequestHoldsAChunkOfTheSpoolNotAPart() async throws {
        var uploads = Uploads()
        uploads.settings.spoolChunkBytes = 1 << 20
        let spool = try DirectorySpool(
            directory: NSTemporaryDirectory() + "receiver-stall-" + UUID().uuidString,
            budget: 8 << 30, ownerShare: 8 << 30)
        let job = try await uploads.store.insert(
            Job(
                id: UUID().uuidString.lowercased(), owner: "mallory", kind: .upload,
                state: .pending, objectKey: "private/mallory/big.bin", source: .uploaded(tusMetadata: nil),
                bytesTotal: 20 << 30, partSize: 5 << 30))
        let body = StalledBody(bytes(1000, seed: 1))
        let receiver = try uploads.receiver("a", spool: spool)
        let request = Task { try await receiver.receive(jobID: job.id, offset: 0, body: body) }
        while !body.stalled { try await Task.sleep(for: .milliseconds(5)) }
        #expect(spool.usage.used > 0 && spool.usage.used <= 1 << 20, "held \(spool.usage.used) bytes: a chunk, not a 5 GiB part")
        body.open()
        #expect(try await request.value == .waiting(committed: 1000))
        #expect(spool.usage.used <= 1000, "between requests the tail holds its own bytes")
    }
}

@Suite struct UploadSpareFileTests {
    /// A sent part's file takes the next bytes when the client is faster than S3: an upload of
    /// ten parts, one in flight, each part held at S3 until the next tail is full, makes two
    /// files, not ten; each part still reaches S3 whole, the last (shorter) one written over a
    /// longer part's stale bytes, and nothing stays on the spool.
    @Test func sentPartsFilesTakeTheNextBytes() async throws {
        let directory = NSTemporaryDirectory() + "receiver-spare-" + UUID().uuidString
        let spool = CountingSpool(try DirectorySpool(directory: directory))
        // Parts 1-8 have a whole part after them; the ninth's successor is the short tenth.
        var uploads = Uploads(objects: InMemoryObjectStore(beforePart: spool.untilTheTailIsFull(after: 1...8)))
        uploads.settings.concurrency = 1
        let body = bytes(9 * 5 * MiB + 12_345, seed: 6)
        let job = try await uploads.insert(size: Int64(body.count))
        let receiver = UploadReceiver(
            store: uploads.store, objects: uploads.objects, spool: spool, settings: uploads.settings, instance: "a", clock: uploads.clock)
        let outcome = try await uploads.send(receiver, job, from: 0, body)
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
        #expect(spool.created == 2, "\(spool.created) files made for 10 parts")
        #expect(spool.usage.used == 0 && DirectorySpool.names(in: directory).isEmpty, "nothing stays on the spool")
    }

    /// A request that ends mid-part, its tail written into a sent part's file, leaves the tail
    /// holding its own bytes only, on the disk and in the budget; the next request goes on
    /// from that file.
    @Test func aTailInASparePartsFileIsCutToItsBytesBetweenRequests() async throws {
        let directory = NSTemporaryDirectory() + "receiver-spare-tail-" + UUID().uuidString
        let spool = CountingSpool(try DirectorySpool(directory: directory))
        var uploads = Uploads(objects: InMemoryObjectStore(beforePart: spool.untilTheTailIsFull(after: 1...1)))
        uploads.settings.concurrency = 1
        let body = bytes(4 * 5 * MiB, seed: 7)
        let job = try await uploads.insert(size: Int64(body.count))
        let receiver = UploadReceiver(
            store: uploads.store, objects: uploads.objects, spool: spool, settings: uploads.settings, instance: "a", clock: uploads.clock)
        let cut = 2 * 5 * MiB + 1_000
        let first = try await uploads.send(receiver, job, from: 0, Array(body[..<cut]))
        #expect(first == .waiting(committed: Int64(cut)))
        #expect(spool.created == 2, "the third part's tail went into the first part's file")
        let tail = try #require(try spool.open(jobID: job.id, name: .tail, create: false, truncate: false))
        #expect(tail.size == 1_000, "the tail file holds its own bytes, not a part's")
        #expect(spool.usage.used == 1_000)
        #expect(DirectorySpool.names(in: directory) == ["\(job.id).tail"], "no part file is left")
        let rest = try await uploads.send(receiver, job, from: Int64(cut), Array(body[cut...]))
        guard case .completed = rest else { Issue.record("\(rest)"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
    }

    /// A client slower than S3 leaves no spare behind: while it stalls mid-part, the part it
    /// sent before is off the spool, which holds the tail alone.
    @Test func aStalledClientHoldsNoSpareFile() async throws {
        let directory = NSTemporaryDirectory() + "receiver-spare-stall-" + UUID().uuidString
        let spool = try DirectorySpool(directory: directory)
        var uploads = Uploads()
        uploads.settings.concurrency = 1
        let body = bytes(2 * 5 * MiB, seed: 8)
        let job = try await uploads.insert(size: Int64(body.count))
        let receiver = try uploads.receiver("a", spool: spool)
        let stalling = StallingBody(body, chunk: 256 * 1024, stallAt: 5 * MiB + 256 * 1024)
        let clock = uploads.clock
        let request = Task { try await driving(clock) { try await receiver.receive(jobID: job.id, offset: 0, body: stalling) } }
        let tailAlone = await poll {
            uploads.objects.calls.contains(.uploadPart(1)) && DirectorySpool.names(in: directory) == ["\(job.id).tail"]
        }
        #expect(tailAlone, "the spool holds \(DirectorySpool.names(in: directory)) while the client stalls")
        stalling.release()
        guard case .completed = try await request.value else { Issue.record("the upload did not complete"); return }
        #expect(uploads.objects.object("private/alice/up.bin") == body)
    }
}

extension UploadSpareFileTests {
    /// A request that dies (here: its part's record fails) after its tail went out as a part
    /// leaves a `.tail` file holding other bytes: the next request on the same instance rebuilds
    /// the tail from the staged pieces the store lists, and the object comes out whole.
    @Test func aRequestThatDiesAfterItsTailWentOutLeavesTheSavedTailToTheNext() async throws {
        struct Crash: Error {}
        let records = Atomic<Int>(0)
        var uploads = Uploads(beforeWrite: { what in
            if what == "recordUploadPart", records.add(1, ordering: .relaxed).newValue == 2 { throw Crash() }
        })
        uploads.settings.concurrency = 1
        // Random: the usual test bytes repeat every 2 KiB, so a tail of the wrong offset would match.
        let body = Digest.randomBytes(4 * 5 * MiB)
        let job = try await uploads.insert(size: Int64(body.count))
        let receiver = try uploads.receiver("a")
        let saved = 5 * MiB + 1_000
        #expect(try await uploads.send(receiver, job, from: 0, Array(body[..<saved])) == .waiting(committed: Int64(saved)))
        // The second request fills the tail (part 2) and writes 3000 bytes of a new one.
        let dying = 2 * 5 * MiB + 3_000
        await #expect(throws: Crash.self) { _ = try await uploads.send(receiver, job, from: Int64(saved), Array(body[saved..<dying])) }
        uploads.store.expireLease(job.id)
        let committed = try #require(try await uploads.store.job(id: job.id)).bytesCommitted
        #expect(committed == Int64(saved))
        let rest = try await uploads.send(receiver, job, from: committed, Array(body[Int(committed)...]))
        guard case .completed = rest else { Issue.record("\(rest)"); return }
        let whole = uploads.objects.object("private/alice/up.bin") == body
        #expect(whole, "the object is the body, the tail from its saved bytes")
    }
}
