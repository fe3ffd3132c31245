import Adapters
import Crypto
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import TransferEngine

private let MiB = 1024 * 1024

/// Deterministic bytes, different at every offset of a part.
private func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
    // Eight bytes a step: a debug build makes a byte-by-byte loop over tens of MiB slow.
    var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
    var out = [UInt8](repeating: 0, count: count)
    out.withUnsafeMutableBytes { raw in
        guard let base = raw.baseAddress else { return }
        var offset = 0
        while offset < count {
            state ^= state &<< 13; state ^= state &>> 7; state ^= state &<< 17
            withUnsafeBytes(of: state.littleEndian) { word in
                base.advanced(by: offset).copyMemory(from: word.baseAddress!, byteCount: min(8, count - offset))
            }
            offset += 8
        }
    }
    return out
}

/// The engine with in-memory ports and a manual clock.
private struct Rig {
    let clock = ManualClock()
    let store: InMemoryJobStore
    let objects: InMemoryObjectStore
    var settings = EngineSettings()
    let spoolDirectory: String

    init(objects: InMemoryObjectStore? = nil) {
        store = InMemoryJobStore(clock: clock)
        self.objects = objects ?? InMemoryObjectStore(clock: clock)
        settings.concurrency = 2
        settings.tickMilliseconds = 500
        settings.leaseMilliseconds = 30_000
        settings.backoff = Backoff(baseMilliseconds: 100, capMilliseconds: 1000)
        spoolDirectory = NSTemporaryDirectory() + "engine-spool-" + UUID().uuidString
    }

    func spool() throws -> DirectorySpool { try DirectorySpool(directory: spoolDirectory) }

    func runner(store: (any JobStore)? = nil, fetcher: (any SourceFetcher)? = nil) throws -> JobRunner {
        JobRunner(store: store ?? self.store, objects: objects, fetcher: fetcher, spool: try spool(), settings: settings, clock: clock)
    }

    @discardableResult
    func insert(_ kind: Job.Kind, source: JobSource, key: String?, options: JobOptions = JobOptions()) async throws -> Job {
        try await store.insert(
            Job(
                id: UUID().uuidString.lowercased(), owner: "alice", kind: kind, state: .queued, objectKey: key,
                source: source, options: options, bytesTotal: nil, partSize: settings.partSize))
    }

    /// Claims the next job as `owner` and runs it to its outcome on the manual clock.
    func claimAndRun(_ owner: String = "a", runner: JobRunner? = nil) async throws -> (JobRunner.Outcome, Job) {
        guard let (job, lease) = try await store.claim(owner: owner, leaseMilliseconds: settings.leaseMilliseconds) else {
            throw NothingToClaim()
        }
        let runner = try runner ?? self.runner()
        let outcome = try await driving(clock) { try await runner.run(job, lease: lease) }
        return (outcome, try await store.job(id: job.id)!)
    }
}

private func copySource(_ key: String) -> JobSource { .object(ObjectSource(key: key)) }

@Suite struct JobRunnerTests {
    @Test func copyMovesEveryPartAndChecksTheResult() async throws {
        let rig = Rig()
        let body = pattern(23 * MiB + 3)
        rig.objects.put("src", body)
        try await rig.insert(.copy, source: copySource("src"), key: "dst")
        let (outcome, job) = try await rig.claimAndRun()
        #expect(job.state == .completed)
        #expect(rig.objects.object("dst") == body)
        #expect(job.partsTotal == 5 && job.partsCompleted == 5 && job.bytesCommitted == Int64(body.count))
        guard case .completed(let etag) = outcome else { Issue.record("\(outcome)"); return }
        #expect(etag.hasSuffix("-5\""))
        #expect(rig.objects.openUploads == 0)
        #expect(rig.objects.count(.create) == 1)
    }

    @Test func aDeadOwnersUnrecordedUploadIsAbortedButAFreshOneOfTheSameKeyIsNot() async throws {
        let rig = Rig()
        rig.objects.put("src", pattern(12 * MiB))
        try await rig.insert(.copy, source: copySource("src"), key: "dst")
        // The first owner claims the job, begins an upload it never records, and dies.
        _ = try await rig.store.claim(owner: "dead", leaseMilliseconds: rig.settings.leaseMilliseconds)
        let orphan = rig.objects.addUpload(key: "dst", age: 0)
        rig.clock.advance(by: Int(rig.settings.leaseMilliseconds) + 1)
        // Meanwhile another writer of the same key has just begun its own upload.
        let fresh = rig.objects.addUpload(key: "dst", age: 1)
        let (outcome, finished) = try await rig.claimAndRun("b")
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(finished.attempts == 2 && rig.objects.object("dst") == pattern(12 * MiB))
        let open = try await rig.objects.openUploads(key: "dst", olderThan: 0)
        #expect(!open.contains(orphan))
        #expect(open == [fresh])
    }

    /// Parts that end close together are recorded in one write; every one is recorded before
    /// the object is completed.
    @Test func partsEndingTogetherAreRecordedTogether() async throws {
        var rig = Rig()
        rig.settings.concurrency = 3
        let body = pattern(6 * 5 * MiB, seed: 5)
        rig.objects.put("src-batch", body)
        try await rig.insert(.copy, source: copySource("src-batch"), key: "dst-batch")
        let (outcome, job) = try await rig.claimAndRun()
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        let parts = try await rig.store.parts(of: job.id)
        #expect(parts.map(\.number) == Array(1...6) && job.bytesCommitted == Int64(body.count))
        // On the manual clock every part ends at the same instant: the first is written at once,
        // the rest with others.
        #expect(rig.store.partWrites >= 2 && rig.store.partWrites < 6, "\(rig.store.partWrites) writes for 6 parts")
        #expect(rig.objects.object("dst-batch") == body)
    }

    @Test func aOnePartObjectIsOneCopyObject() async throws {
        let rig = Rig()
        rig.objects.put("src", pattern(MiB))
        try await rig.insert(.copy, source: copySource("src"), key: "dst")
        let (_, job) = try await rig.claimAndRun()
        #expect(job.state == .completed && rig.objects.object("dst") == pattern(MiB))
        #expect(rig.objects.count(.copyObject) == 1 && rig.objects.count(.create) == 0)
    }

    @Test func retryableErrorsAreRetriedWithinTheLimit() async throws {
        // Part 2 fails twice with SlowDown, then succeeds: three attempts, one object.
        let objects = InMemoryObjectStore(fault: { call, n in
            call == .copyPart(2) && n < 2 ? TransferError(code: .throttled, retryable: true) : nil
        })
        let rig = Rig(objects: objects)
        rig.objects.put("src", pattern(12 * MiB))
        try await rig.insert(.copy, source: copySource("src"), key: "dst")
        let (_, job) = try await rig.claimAndRun()
        #expect(job.state == .completed && rig.objects.object("dst") == pattern(12 * MiB))
        #expect(rig.objects.count(.copyPart(2)) == 3)
        #expect(rig.objects.count(.copyPart(1)) == 1)
    }

    @Test func retriesWaitForTheirBackoff() async throws {
        // With a 10 s backoff floor, the retry of part 1 comes no sooner than 10 s of clock later.
        let times = Mutex<[Int]>([])
        let clockBox = Mutex<ManualClock?>(nil)
        let objects = InMemoryObjectStore(fault: { call, n in
            guard call == .copyPart(1) else { return nil }
            times.withLock { $0.append(clockBox.withLock { $0 }!.now()) }
            return n == 0 ? TransferError(code: .internalError, retryable: true) : nil
        })
        var rig = Rig(objects: objects)
        clockBox.withLock { $0 = rig.clock }
        rig.settings.backoff = Backoff(baseMilliseconds: 20_000, capMilliseconds: 20_000)
        rig.settings.random = { 0.5 }
        rig.settings.leaseMilliseconds = 60_000
        rig.objects.put("src", pattern(12 * MiB))
        try await rig.insert(.copy, source: copySource("src"), key: "dst")
        let (_, job) = try await rig.claimAndRun()
        #expect(job.state == .completed)
        let seen = times.withLock { $0 }
        #expect(seen.count == 2)
        // The jitter draw is fixed at one half of 20 s: the retry waits 10 s of clock, not less.
        #expect(seen[1] - seen[0] >= 10_000)
        #expect(seen[1] - seen[0] < 11_000)
    }

    @Test func aFailureThatMayPassSendsTheJobBackToWaitWithItsPartsAndUpload() async throws {
        let outage = Mutex(true)
        let objects = InMemoryObjectStore(fault: { call, _ in
            call == .copyPart(3) && outage.withLock({ $0 }) ? TransferError(code: .throttled, retryable: true) : nil
        })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        rig.settings.random = { 0 }
        rig.objects.put("src", pattern(15 * MiB + 1))
        var options = JobOptions()
        options.retryLimit = 0
        try await rig.insert(.copy, source: copySource("src"), key: "dst", options: options)
        let (outcome, waiting) = try await rig.claimAndRun()
        // Back to the queue until 10 s after the failure (the manual clock may have moved on a
        // tick since), with the two parts before the failure kept.
        guard case .postponed(let retryAt) = outcome else { Issue.record("\(outcome)"); return }
        #expect((9_000...10_000).contains(retryAt - Int64(rig.clock.now())))
        #expect(waiting.state == .queued && waiting.retryAt == retryAt && waiting.error == nil)
        #expect(waiting.lastError == JobFailure(.retriesExhausted, cause: .throttled) && waiting.partsCompleted == 2)
        #expect(rig.objects.openUploads == 1 && rig.objects.count(.abort) == 0)
        // Not before its time.
        rig.clock.advance(by: Int(retryAt) - rig.clock.now() - 1)
        #expect(try await rig.store.claim(owner: "b", leaseMilliseconds: 30_000) == nil)
        rig.clock.advance(by: 1)
        outage.withLock { $0 = false }
        let (resumed, done) = try await rig.claimAndRun("b")
        guard case .completed = resumed else { Issue.record("\(resumed)"); return }
        #expect(done.state == .completed && done.attempts == 2 && rig.objects.object("dst") == pattern(15 * MiB + 1))
        // Only the missing parts moved again, into the same upload.
        #expect(rig.objects.count(.copyPart(1)) == 1 && rig.objects.count(.copyPart(2)) == 1 && rig.objects.count(.create) == 1)
    }

    @Test func waitsDoubleFromTenSecondsAndTheJobFailsRetryableOnceTheWindowPassesWithoutProgress() async throws {
        let outage = Mutex(true)
        let objects = InMemoryObjectStore(fault: { call, _ in
            call == .copyPart(2) && outage.withLock({ $0 }) ? TransferError(code: .storageUnavailable, retryable: true) : nil
        })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        rig.settings.random = { 0 }
        rig.settings.retryWindowSeconds = 100
        rig.objects.put("src", pattern(12 * MiB))
        var options = JobOptions()
        options.retryLimit = 0
        let job = try await rig.insert(.copy, source: copySource("src"), key: "dst", options: options)
        var waits: [Int64] = []
        var outcome = JobRunner.Outcome.leaseLost
        for _ in 0..<10 {
            (outcome, _) = try await rig.claimAndRun()
            guard case .postponed(let retryAt) = outcome else { break }
            waits.append(retryAt - Int64(rig.clock.now()))
            rig.clock.advance(by: Int(retryAt) - rig.clock.now())
        }
        // 10 s, 20 s, 40 s, 80 s (less the clock's tick after each failure); the run after the
        // fourth wait ends past the 100 s window and fails.
        #expect(waits.count == 4)
        for (wait, expected) in zip(waits, [10_000, 20_000, 40_000, 80_000] as [Int64]) {
            #expect((expected - 1_000...expected).contains(wait), "\(waits)")
        }
        #expect(outcome == .failed(code: .retriesExhausted))
        let failed = try #require(try await rig.store.job(id: job.id))
        #expect(failed.error == JobFailure(.retriesExhausted, cause: .storageUnavailable, retryable: true))
        // Its upload and part 1 stay for a retry; the retry sends only what is missing.
        #expect(rig.objects.openUploads == 1 && rig.objects.count(.abort) == 0)
        outage.withLock { $0 = false }
        let retried = try await rig.store.retry(id: job.id, failedSince: 0, quota: nil)
        #expect(retried?.state == .queued && retried?.error == nil && retried?.lastError == failed.error)
        let (done, _) = try await rig.claimAndRun()
        guard case .completed = done else { Issue.record("\(done)"); return }
        #expect(rig.objects.count(.copyPart(1)) == 1 && rig.objects.count(.create) == 1)
        #expect(rig.objects.object("dst") == pattern(12 * MiB))
    }

    @Test func anErrorNoRetryCanHelpFailsAtOnce() async throws {
        let objects = InMemoryObjectStore(fault: { call, _ in
            call == .copyPart(1) ? TransferError(code: .accessDenied, retryable: false) : nil
        })
        let rig = Rig(objects: objects)
        rig.objects.put("src", pattern(12 * MiB))
        try await rig.insert(.copy, source: copySource("src"), key: "dst")
        let (outcome, _) = try await rig.claimAndRun()
        #expect(outcome == .failed(code: .accessDenied))
        #expect(rig.objects.count(.copyPart(1)) == 1 && rig.objects.openUploads == 0)
    }

    @Test func pauseStopsNewPartsAndResumeFinishesWithoutRepeatingThem() async throws {
        let storeBox = Mutex<InMemoryJobStore?>(nil)
        let jobID = Mutex("")
        // The owner pauses as part 3 starts: part 3 may finish moving, but 4 and 5 never start.
        let objects = InMemoryObjectStore(beforePart: { part in
            if part == 3, let store = storeBox.withLock({ $0 }) {
                _ = try await store.transition(id: jobID.withLock { $0 }, .pause)
            }
        })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        storeBox.withLock { $0 = rig.store }
        rig.objects.put("src", pattern(25 * MiB))
        let job = try await rig.insert(.copy, source: copySource("src"), key: "dst")
        jobID.withLock { $0 = job.id }
        let (outcome, paused) = try await rig.claimAndRun()
        #expect(outcome == .stopped(.paused))
        #expect(paused.state == .paused && paused.partsCompleted == 2)
        #expect(rig.objects.count(.copyPart(4)) == 0 && rig.objects.count(.copyPart(5)) == 0)
        // While paused nothing is claimable and no byte moves, however long.
        rig.clock.advance(by: 600_000)
        #expect(try await rig.store.claim(owner: "b", leaseMilliseconds: 30_000) == nil)
        #expect(try await rig.store.job(id: job.id)!.bytesTransferred == paused.bytesTransferred)
        _ = try await rig.store.transition(id: job.id, .resume)
        storeBox.withLock { $0 = nil }
        let (resumed, done) = try await rig.claimAndRun("b")
        guard case .completed = resumed else { Issue.record("\(resumed)"); return }
        #expect(done.state == .completed && rig.objects.object("dst") == pattern(25 * MiB))
        #expect(rig.objects.count(.copyPart(1)) == 1 && rig.objects.count(.copyPart(2)) == 1)
        #expect(rig.objects.count(.create) == 1)
    }

    @Test func cancelAbortsTheUploadAndLeavesNothing() async throws {
        let storeBox = Mutex<InMemoryJobStore?>(nil)
        let jobID = Mutex("")
        let objects = InMemoryObjectStore(beforePart: { part in
            if part == 2, let store = storeBox.withLock({ $0 }) {
                _ = try await store.transition(id: jobID.withLock { $0 }, .cancel)
            }
        })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        storeBox.withLock { $0 = rig.store }
        rig.objects.put("src", pattern(20 * MiB))
        let job = try await rig.insert(.copy, source: copySource("src"), key: "dst")
        jobID.withLock { $0 = job.id }
        let (outcome, canceled) = try await rig.claimAndRun()
        #expect(outcome == .stopped(.canceled) && canceled.state == .canceled)
        #expect(rig.objects.openUploads == 0 && rig.objects.object("dst") == nil)
        #expect(rig.objects.count(.copyPart(3)) == 0)
    }

    @Test func aJobPastItsTimeoutFailsKeepingItsUploadForARetry() async throws {
        let clockBox = Mutex<ManualClock?>(nil)
        // Every part takes a minute of clock; the job may run ten seconds.
        let objects = InMemoryObjectStore(beforePart: { _ in try await clockBox.withLock { $0 }!.sleep(milliseconds: 60_000) })
        let rig = Rig(objects: objects)
        clockBox.withLock { $0 = rig.clock }
        rig.objects.put("src", pattern(12 * MiB))
        var options = JobOptions()
        options.timeoutSeconds = 10
        let start = rig.clock.now()
        try await rig.insert(.copy, source: copySource("src"), key: "dst", options: options)
        let (outcome, job) = try await rig.claimAndRun()
        #expect(outcome == .failed(code: .jobTimeout))
        #expect(job.state == .failed && job.error == JobFailure(.jobTimeout, retryable: true))
        #expect(rig.objects.openUploads == 1 && rig.objects.count(.abort) == 0)
        #expect(rig.clock.now() - start < 60_000)
    }

    @Test func withoutATimeoutAJobRunsAsLongAsItsBytesMove() async throws {
        let clockBox = Mutex<ManualClock?>(nil)
        // Each part takes 5 s of clock: 15 s in all, more than the 10 s stall limit, never 10 s without a part.
        let objects = InMemoryObjectStore(beforePart: { _ in try await clockBox.withLock { $0 }!.sleep(milliseconds: 5_000) })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        #expect(rig.settings.timeoutSeconds == nil)
        clockBox.withLock { $0 = rig.clock }
        rig.objects.put("src", pattern(12 * MiB))
        var options = JobOptions()
        options.stallTimeoutSeconds = 10
        try await rig.insert(.copy, source: copySource("src"), key: "dst", options: options)
        let (outcome, job) = try await rig.claimAndRun()
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(job.state == .completed && rig.objects.object("dst") == pattern(12 * MiB))
    }

    @Test func aJobWhoseBytesStopFailsStalledKeepingItsUpload() async throws {
        let clockBox = Mutex<ManualClock?>(nil)
        // Part 2 never ends.
        let objects = InMemoryObjectStore(beforePart: { part in
            if part == 2 { try await clockBox.withLock { $0 }!.sleep(milliseconds: 3_600_000) }
        })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        rig.settings.stallTimeoutSeconds = 10
        clockBox.withLock { $0 = rig.clock }
        rig.objects.put("src", pattern(12 * MiB))
        let start = rig.clock.now()
        try await rig.insert(.copy, source: copySource("src"), key: "dst")
        let (outcome, job) = try await rig.claimAndRun()
        #expect(outcome == .failed(code: .stalled))
        #expect(job.error == JobFailure(.stalled, retryable: true) && job.partsCompleted == 1)
        #expect(rig.objects.openUploads == 1)
        // Within the limit and a look of the lease's timer (1 s) past it.
        #expect(rig.clock.now() - start <= 11_000)
    }

    /// A store that dies (as the process would) after `survive` recorded parts: nothing more
    /// is written, and the run throws.
    private final class CrashingStore: JobStore {
        struct Crash: Error {}
        let inner: InMemoryJobStore
        let survive: Int
        let recorded = Atomic<Int>(0)
        init(_ inner: InMemoryJobStore, survive: Int) { self.inner = inner; self.survive = survive }
        func gate() throws { if recorded.load(ordering: .relaxed) >= survive { throw Crash() } }
        func insert(_ job: Job, quota: OwnerQuota?) async throws -> Job { try await inner.insert(job, quota: quota) }
        func waitingOwners(limit: Int) async throws -> [String] { try await inner.waitingOwners(limit: limit) }
        func job(id: String) async throws -> Job? { try gate(); return try await inner.job(id: id) }
        func claim(owner: String, leaseMilliseconds: Int64, excluding: Set<String>) async throws -> (Job, Lease)? {
            try await inner.claim(owner: owner, leaseMilliseconds: leaseMilliseconds, excluding: excluding)
        }
        func beginCompleting(_ lease: Lease) async throws { try gate(); try await inner.beginCompleting(lease) }
        func renew(_ lease: Lease, leaseMilliseconds: Int64, flowing: Int64?) async throws -> Lease {
            try gate()
            return try await inner.renew(lease, leaseMilliseconds: leaseMilliseconds, flowing: flowing)
        }
        func release(_ lease: Lease) async throws { try gate(); try await inner.release(lease) }
        func recordPart(_ part: RecordedPart, under lease: Lease) async throws {
            try gate()
            try await inner.recordPart(part, under: lease)
            recorded.add(1, ordering: .relaxed)
        }
        func parts(of jobID: String) async throws -> [RecordedPart] { try await inner.parts(of: jobID) }
        func start(
            _ lease: Lease, uploadID: String?, partChecksum: PartChecksum?, partsTotal: Int, partSize: Int64,
            bytesTotal: Int64?, sourceETag: String?
        ) async throws {
            try gate()
            try await inner.start(
                lease, uploadID: uploadID, partChecksum: partChecksum, partsTotal: partsTotal, partSize: partSize,
                bytesTotal: bytesTotal, sourceETag: sourceETag)
        }
        func finish(_ lease: Lease, state: Job.State, etag: String?, error: JobFailure?, checksum: ObjectChecksum?) async throws {
            try gate(); try await inner.finish(lease, state: state, etag: etag, error: error, checksum: checksum)
        }
        func list(owner: String?, state: Job.State?, kind: Job.Kind?, limit: Int, after cursor: String?) async throws -> [Job] { [] }
        func transition(id: String, _ action: JobLifecycle.Action) async throws -> Job? { nil }
        func postpone(_ lease: Lease, until retryAt: Int64, lastError: JobFailure) async throws {
            try gate(); try await inner.postpone(lease, until: retryAt, lastError: lastError)
        }
        func retry(id: String, failedSince: Int64, quota: OwnerQuota?) async throws -> Job? { nil }
        func uploadIDsInUse(key: String) async throws -> Set<String> { try await inner.uploadIDsInUse(key: key) }
    }

    /// 0…4: a crash after that many recorded parts; 5: after every part and the completion,
    /// before the job is marked completed.
    @Test(arguments: 0...5)
    func aCrashAfterAnyPartResumesOnAnotherInstance(afterParts survive: Int) async throws {
        var rig = Rig()
        rig.settings.concurrency = 1
        let body = pattern(21 * MiB + 5)
        rig.objects.put("src", body)
        try await rig.insert(.copy, source: copySource("src"), key: "dst")
        let crashing = CrashingStore(rig.store, survive: survive)
        await #expect(throws: CrashingStore.Crash.self) { _ = try await rig.claimAndRun("a", runner: try rig.runner(store: crashing)) }
        // Instance b finds nothing until a's lease lapses, then finishes the job.
        #expect(try await rig.store.claim(owner: "b", leaseMilliseconds: 30_000) == nil)
        rig.clock.advance(by: 30_001)
        let (outcome, job) = try await rig.claimAndRun("b")
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(job.state == .completed && rig.objects.object("dst") == body)
        #expect(job.attempts == 2)
        if survive > 0 {
            for part in 1...survive {
                #expect(rig.objects.count(.copyPart(part)) == 1, "recorded part \(part) was sent again")
            }
        }
        // Dying between CreateMultipartUpload and recording its id leaves an upload no job owns:
        // the next owner aborts it. From the first recorded part on, the upload is reused.
        #expect(rig.objects.count(.create) == (survive == 0 ? 2 : 1))
        #expect(rig.objects.openUploads == 0)
    }

    @Test func aWorkerThatLostItsLeaseWritesNothingMore() async throws {
        let storeBox = Mutex<InMemoryJobStore?>(nil)
        let jobID = Mutex("")
        let stolen = Mutex<(Job, Lease)?>(nil)
        // While a moves part 2 (stalled, as under SIGSTOP), its lease lapses and b claims the job.
        let objects = InMemoryObjectStore(beforePart: { part in
            guard part == 2, let store = storeBox.withLock({ $0 }) else { return }
            storeBox.withLock { $0 = nil }
            store.expireLease(jobID.withLock { $0 })
            stolen.withLock { $0 = nil }
            let claim = try await store.claim(owner: "b", leaseMilliseconds: 30_000)
            stolen.withLock { $0 = claim }
        })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        storeBox.withLock { $0 = rig.store }
        rig.objects.put("src", pattern(15 * MiB))
        let job = try await rig.insert(.copy, source: copySource("src"), key: "dst")
        jobID.withLock { $0 = job.id }
        let (outcome, afterA) = try await rig.claimAndRun("a")
        #expect(outcome == .leaseLost)
        #expect(afterA.state == .running && afterA.partsCompleted == 1, "a recorded part 2 after losing its lease")
        guard let (claimed, lease) = stolen.withLock({ $0 }) else { Issue.record("b did not claim"); return }
        #expect(lease.owner == "b")
        let runner = try rig.runner()
        let final = try await driving(rig.clock) { try await runner.run(claimed, lease: lease) }
        guard case .completed = final else { Issue.record("\(final)"); return }
        #expect(rig.objects.object("dst") == pattern(15 * MiB))
    }

    // MARK: import

    @Test(arguments: [true, false])
    func importMovesASourceWithOrWithoutRanges(ranges: Bool) async throws {
        let rig = Rig()
        let body = pattern(17 * MiB + 11, seed: 3)
        let fetcher = InMemoryFetcher(body: body, ranges: ranges)
        try await rig.insert(.import, source: .url("https://example.com/f"), key: "imported")
        let (outcome, job) = try await rig.claimAndRun(runner: try rig.runner(fetcher: fetcher))
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(job.state == .completed && rig.objects.object("imported") == body)
        #expect(rig.objects.count(.uploadPart(1)) == 1 && rig.objects.openUploads == 0)
        // The spooled parts are gone once they are in S3.
        #expect(DirectorySpool.names(in: rig.spoolDirectory).filter { $0.hasPrefix(job.id) }.isEmpty)
    }

    @Test func aSmallImportIsOnePut() async throws {
        let rig = Rig()
        let fetcher = InMemoryFetcher(body: pattern(1000), ranges: true)
        try await rig.insert(.import, source: .url("https://example.com/f"), key: "small")
        let (_, job) = try await rig.claimAndRun(runner: try rig.runner(fetcher: fetcher))
        #expect(job.state == .completed && rig.objects.object("small") == pattern(1000))
        #expect(rig.objects.count(.putObject) == 1 && rig.objects.count(.create) == 0)
    }

    /// The twin refuses, as AWS does, a part whose check is not its upload's algorithm and a
    /// completion without the parts' checksums when the upload declared one.
    @Test(arguments: PartChecksum.allCases)
    func importPartsCarryTheChecksumTheirUploadWasCreatedWith(checksum: PartChecksum) async throws {
        var rig = Rig()
        rig.settings.partChecksum = checksum
        let body = pattern(12 * MiB + 5, seed: 9)
        try await rig.insert(.import, source: .url("https://example.com/f"), key: "checked")
        let (outcome, job) = try await rig.claimAndRun(runner: try rig.runner(fetcher: InMemoryFetcher(body: body, ranges: true)))
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(job.partChecksum == checksum && rig.objects.object("checked") == body)
        let parts = try await rig.store.parts(of: job.id)
        #expect(parts.count == 3)
        #expect(parts.allSatisfy { $0.checksum == (checksum == .crc32c ? InMemoryObjectStore.crc32c(Self.bytes(of: $0, in: body)) : nil) })
    }

    @Test func anUploadCreatedBeforeChecksumsWereDeclaredGoesOnWithContentMD5() async throws {
        let rig = Rig()
        #expect(rig.settings.partChecksum == .crc32c)
        let body = pattern(12 * MiB + 5, seed: 4)
        let inserted = try await rig.insert(.import, source: .url("https://example.com/f"), key: "legacy")
        // An earlier build's run: its upload declared no algorithm, and it recorded none.
        let legacy = try await rig.objects.createMultipartUpload(key: "legacy", attributes: ObjectAttributesSpec())
        let (_, lease) = try #require(try await rig.store.claim(owner: "old", leaseMilliseconds: rig.settings.leaseMilliseconds))
        try await rig.store.start(
            lease, uploadID: legacy, partsTotal: 3, partSize: rig.settings.partSize,
            bytesTotal: Int64(body.count), sourceETag: nil)
        try await rig.store.release(lease)
        let (outcome, job) = try await rig.claimAndRun(runner: try rig.runner(fetcher: InMemoryFetcher(body: body, ranges: true)))
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(job.id == inserted.id && job.uploadID == legacy && job.partChecksum == nil)
        #expect(rig.objects.object("legacy") == body && rig.objects.count(.create) == 1)
        #expect(try await rig.store.parts(of: job.id).allSatisfy { $0.checksum == nil })
    }

    private static func bytes(of part: RecordedPart, in body: [UInt8]) -> [UInt8] {
        let start = (part.number - 1) * 5 * MiB
        return Array(body[start..<(start + Int(part.size))])
    }

    /// A source faster than S3 (each part held at S3 until the source has handed out the next
    /// whole) has each part written into a sent part's file: eight parts make two files, each
    /// reaches S3 whole (the short last one over a longer part's bytes), and nothing stays on
    /// the spool.
    @Test func aStreamFasterThanS3WritesEachPartIntoASentPartsFile() async throws {
        let partSize = 5 * MiB
        let body = pattern(7 * partSize + 12_345, seed: 5)
        let source = StallingBody(body)
        let objects = InMemoryObjectStore(beforePart: { part in
            _ = await poll { source.handedOut.load(ordering: .relaxed) >= min((part + 1) * partSize, body.count) }
        })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        let spool = CountingSpool(try rig.spool())
        try await rig.insert(.import, source: .url("https://example.com/f"), key: "streamed")
        let runner = JobRunner(
            store: rig.store, objects: objects, fetcher: RangelessSource(body: source), spool: spool, settings: rig.settings,
            clock: rig.clock)
        let (outcome, job) = try await rig.claimAndRun(runner: runner)
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(objects.object("streamed") == body)
        #expect(try await rig.store.parts(of: job.id).count == 8)
        #expect(spool.created == 2, "\(spool.created) files made for 8 parts")
        #expect(spool.usage.used == 0 && DirectorySpool.names(in: rig.spoolDirectory).isEmpty, "nothing stays on the spool")
    }

    /// A source slower than S3 leaves no spare file: the first part reaches S3 while the second
    /// fills, and while the source then stalls the spool holds the part being filled alone.
    @Test func aStalledStreamHoldsOnlyThePartItFills() async throws {
        let partSize = 5 * MiB
        let body = pattern(2 * partSize, seed: 6)
        let source = StallingBody(body, stallAt: partSize + 256 * 1024)
        let objects = InMemoryObjectStore(beforePart: { part in
            _ = await poll { source.handedOut.load(ordering: .relaxed) >= partSize + 128 * 1024 }
        })
        var rig = Rig(objects: objects)
        rig.settings.concurrency = 1
        let spool = try rig.spool()
        let job = try await rig.insert(.import, source: .url("https://example.com/f"), key: "stalled")
        let runner = JobRunner(
            store: rig.store, objects: rig.objects, fetcher: RangelessSource(body: source), spool: spool, settings: rig.settings,
            clock: rig.clock)
        let (claimed, lease) = try #require(try await rig.store.claim(owner: "a", leaseMilliseconds: rig.settings.leaseMilliseconds))
        let clock = rig.clock
        let run = Task { try await driving(clock) { try await runner.run(claimed, lease: lease) } }
        let partAlone = await poll {
            source.handedOut.load(ordering: .relaxed) == partSize + 256 * 1024 && spool.usage.used == Int64(partSize)
                && DirectorySpool.names(in: rig.spoolDirectory) == ["\(job.id).part-2"]
        }
        #expect(partAlone, "the spool holds \(DirectorySpool.names(in: rig.spoolDirectory)), \(spool.usage.used) bytes")
        source.release()
        guard case .completed = try await run.value else { Issue.record("not completed"); return }
        #expect(rig.objects.object("stalled") == body)
    }

    @Test func aRefusedSourceFailsTheImportWithItsCode() async throws {
        let rig = Rig()
        let fetcher = InMemoryFetcher(
            body: pattern(10), ranges: true,
            fault: { _ in
                TransferError(code: .forbiddenAddress, retryable: false)
            })
        try await rig.insert(.import, source: .url("http://169.254.169.254/"), key: "x")
        let (outcome, job) = try await rig.claimAndRun(runner: try rig.runner(fetcher: fetcher))
        #expect(outcome == .failed(code: .forbiddenAddress) && job.state == .failed)
    }
}

/// A source without ranges: its body, read once, is `body`.
private struct RangelessSource: SourceFetcher {
    let body: StallingBody

    func probe(_ url: String) async throws -> SourceProbe { SourceProbe(size: nil, etag: nil, acceptsRanges: false) }

    func fetch(_ url: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile) async throws -> UInt32? {
        throw TransferError.sourceChanged
    }

    func stream(_ url: String, limit: Int64) async throws -> any ByteSource { body }
}
