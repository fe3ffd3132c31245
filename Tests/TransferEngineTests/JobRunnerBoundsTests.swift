import Adapters
import Crypto
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import TransferEngine

private let MiB = 1024 * 1024

private func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
    repeatingBytes(count, seed: seed)
}

private func objectSource(_ key: String) -> JobSource { .object(ObjectSource(key: key)) }

@Suite struct JobRunnerBoundsTests {
    /// A copy paused mid-way whose source is replaced by a smaller object: the recorded parts
    /// belong to the old version. The job fails `source_changed` instead of trapping.
    @Test func aSourceThatShrinksWhilePausedFailsTheJobInsteadOfTrapping() async throws {
        let storeBox = Mutex<InMemoryJobStore?>(nil), jobID = Mutex("")
        var bench = Bench(objects: { clock in
            InMemoryObjectStore(
                beforePart: { part in
                    if part == 4, let store = storeBox.withLock({ $0 }) {
                        _ = try await store.transition(id: jobID.withLock { $0 }, .pause)
                    }
                }, clock: clock)
        })
        bench.settings.concurrency = 1
        storeBox.withLock { $0 = bench.store }
        bench.objects.put("src", bytes(25 * MiB, seed: 1))
        let job = try await bench.insert(.copy, source: objectSource("src"))
        jobID.withLock { $0 = job.id }
        let (paused, _) = try await bench.run()
        #expect(paused == .stopped(.paused))
        storeBox.withLock { $0 = nil }
        bench.objects.put("src", bytes(7 * MiB, seed: 2))
        _ = try await bench.store.transition(id: job.id, .resume)
        let (outcome, failed) = try await bench.run("b")
        #expect(outcome == .failed(code: .sourceChanged))
        #expect(failed.error == JobFailure(.sourceChanged))
        #expect(bench.objects.openUploads == 0, "the old upload is aborted")
    }

    /// An import resumed after a crash whose source now says another size fails the same way.
    @Test func anImportWhoseSourceChangesSizeFails() async throws {
        var bench = Bench()
        bench.settings.concurrency = 1
        let job = try await bench.insert(.import, source: .url("https://example.com/f"))
        // The first run records its plan (size 12 MiB), then its holder dies.
        let (claimed, lease) = try #require(try await bench.store.claim(owner: "dead", leaseMilliseconds: 30_000))
        try await bench.store.start(
            lease, uploadID: try await bench.objects.createMultipartUpload(key: "dst", attributes: .init()),
            partsTotal: 3, partSize: PartPlan.minimumPartSize, bytesTotal: 12 * Int64(MiB), sourceETag: "\"v1\"")
        _ = claimed
        bench.store.expireLease(job.id)
        bench.clock.advance(by: 30_001)
        let fetcher = InMemoryFetcher(body: bytes(20 * MiB, seed: 3), ranges: true)
        let (outcome, _) = try await bench.run("b", runner: try bench.runner(fetcher: fetcher))
        #expect(outcome == .failed(code: .sourceChanged))
    }

    /// A job whose holder died three times is failed `crash_loop` by the fourth, not run.
    @Test func aJobWhoseHolderDiedThreeTimesFailsWithCrashLoop() async throws {
        let bench = Bench()
        bench.objects.put("src", bytes(12 * MiB, seed: 4))
        let job = try await bench.insert(.copy, source: objectSource("src"))
        for holder in ["a", "b", "c", "d"] {
            _ = try #require(try await bench.store.claim(owner: holder, leaseMilliseconds: 30_000))
            bench.store.expireLease(job.id)
        }
        let (outcome, failed) = try await bench.run("e")
        #expect(outcome == .failed(code: .crashLoop))
        #expect(failed.state == .failed && failed.crashes >= 3)
        #expect(bench.objects.count(.copyPart(1)) == 0, "the poison job does not run again")
    }

    /// A released job (SIGTERM) is not a death: it runs again without counting a crash.
    @Test func aReleasedJobIsNotACrash() async throws {
        let bench = Bench()
        bench.objects.put("src", bytes(MiB, seed: 5))
        let job = try await bench.insert(.copy, source: objectSource("src"))
        for holder in ["a", "b", "c", "d"] {
            let (_, lease) = try #require(try await bench.store.claim(owner: holder, leaseMilliseconds: 30_000))
            try await bench.store.release(lease)
        }
        let (outcome, done) = try await bench.run("e")
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(done.crashes == 0 && job.crashes == 0)
    }

    /// Every transfer buffer comes out of the memory budget: with room for two, no more than two
    /// parts move at once whatever the job's concurrency.
    @Test func theMemoryBudgetBoundsPartsInFlight() async throws {
        let inFlight = Atomic<Int>(0), most = Atomic<Int>(0)
        let clockBox = Mutex<ManualClock?>(nil)
        var bench = Bench(objects: { clock in
            InMemoryObjectStore(
                beforePart: { _ in
                    let now = inFlight.add(1, ordering: .relaxed).newValue
                    var seen = most.load(ordering: .relaxed)
                    while now > seen, !most.compareExchange(expected: seen, desired: now, ordering: .relaxed).exchanged {
                        seen = most.load(ordering: .relaxed)
                    }
                    try await clockBox.withLock { $0 }?.sleep(milliseconds: 1000)
                    inFlight.subtract(1, ordering: .relaxed)
                }, clock: clock)
        })
        clockBox.withLock { $0 = bench.clock }
        bench.settings.concurrency = 5
        bench.settings.memory = ByteBudget(capacity: 2 * Int64(MiB))
        bench.settings.transferBufferBytes = Int64(MiB)
        bench.objects.put("src", bytes(30 * MiB, seed: 6))
        try await bench.insert(.copy, source: objectSource("src"))
        let (outcome, _) = try await bench.run()
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(most.load(ordering: .relaxed) == 2)
        #expect(bench.settings.memory.used == 0, "every buffer is given back")
    }

    /// An import waits for room on the spool instead of writing past the budget; with its
    /// running-time limit passed while waiting, it fails without having fetched a byte.
    @Test func anImportWaitsForRoomOnTheSpool() async throws {
        var bench = Bench()
        bench.spoolBudget = 10 * Int64(MiB)
        let spool = try DirectorySpool(directory: bench.spoolDirectory, budget: bench.spoolBudget)
        // Someone else holds 8 MiB of the 10: a 5 MiB part does not fit.
        try await spool.reserve(jobID: "someone-else", name: .part(1), bytes: 8 * Int64(MiB), owner: "someone-else")
        var options = JobOptions()
        options.timeoutSeconds = 5
        let job = try await bench.insert(.import, source: .url("https://example.com/f"), options: options)
        let fetcher = InMemoryFetcher(body: bytes(10 * MiB, seed: 7), ranges: true)
        let (outcome, _) = try await bench.run(runner: try bench.runner(spool: spool, fetcher: fetcher))
        #expect(outcome == .failed(code: .jobTimeout))
        #expect(bench.objects.count(.uploadPart(1)) == 0 && bench.objects.count(.uploadPart(2)) == 0, "nothing was sent")
        #expect(!FileManager.default.fileExists(atPath: spool.path(jobID: job.id, name: .part(1))))
        #expect(spool.usage.used == 8 * Int64(MiB), "its wait held nothing")
    }

    /// A part larger than the whole spool budget can never be spooled: the job says so.
    @Test func aPartLargerThanTheSpoolFailsSpoolTooSmall() async throws {
        var bench = Bench()
        bench.spoolBudget = 4 * Int64(MiB)
        try await bench.insert(.import, source: .url("https://example.com/f"))
        let (outcome, _) = try await bench.run(
            runner: try bench.runner(fetcher: InMemoryFetcher(body: bytes(12 * MiB, seed: 8), ranges: true)))
        #expect(outcome == .failed(code: .spoolTooSmall))
    }

    /// A streamed import (no ranges) lives under the job's controls: its running-time limit
    /// stops it mid-stream, and its lease is renewed while it reads.
    @Test func aStreamedImportHonoursItsTimeoutMidStream() async throws {
        var bench = Bench()
        bench.settings.tickMilliseconds = 500
        let stream = SlowStream(clock: bench.clock, chunks: 10_000, every: 1000)
        var options = JobOptions()
        options.timeoutSeconds = 3
        try await bench.insert(.import, source: .url("https://example.com/slow"), options: options)
        let (outcome, job) = try await bench.run(runner: try bench.runner(fetcher: SlowFetcher(stream: stream)))
        #expect(outcome == .failed(code: .jobTimeout) && job.state == .failed)
        #expect(stream.read.load(ordering: .relaxed) < 10, "the stream stopped when the time was up")
    }

    /// Cancel reaches a streamed import mid-stream: the worker and the source are let go.
    @Test func aStreamedImportStopsWhenCanceled() async throws {
        let bench = Bench()
        let stream = SlowStream(clock: bench.clock, chunks: 10_000, every: 1000)
        let job = try await bench.insert(.import, source: .url("https://example.com/slow"))
        let store = bench.store
        Task {
            while stream.read.load(ordering: .relaxed) < 3 { try await Task.sleep(for: .milliseconds(1)) }
            _ = try await store.transition(id: job.id, .cancel)
        }
        let (outcome, canceled) = try await bench.run(runner: try bench.runner(fetcher: SlowFetcher(stream: stream)))
        #expect(outcome == .stopped(.canceled) && canceled.state == .canceled)
        #expect(stream.read.load(ordering: .relaxed) < 10)
    }

    /// A streamed import past the object limit fails as the bytes arrive, long before the rest.
    @Test func aStreamedImportPastTheLimitFailsAsBytesArrive() async throws {
        var bench = Bench()
        bench.settings.maxObjectSize = 6 * Int64(MiB)
        try await bench.insert(.import, source: .url("https://example.com/big"))
        let fetcher = InMemoryFetcher(body: bytes(40 * MiB, seed: 9), ranges: false)
        let (outcome, _) = try await bench.run(runner: try bench.runner(fetcher: fetcher))
        #expect(outcome == .failed(code: .entityTooLarge))
        #expect(bench.objects.object("dst") == nil && bench.objects.openUploads == 0)
    }

    /// A streamed import resumed after a crash reads the source again and sends only the parts
    /// S3 does not hold yet (same size and MD5).
    @Test func aResumedStreamedImportSkipsPartsAlreadySent() async throws {
        struct Crash: Error {}
        let recordsLeft = Atomic<Int>(2)
        var bench = Bench(beforeWrite: { what in
            guard what == "recordPart" else { return }
            if recordsLeft.subtract(1, ordering: .relaxed).oldValue <= 0 { throw Crash() }
        })
        bench.settings.concurrency = 1
        let body = bytes(16 * MiB + 3, seed: 10)
        let job = try await bench.insert(.import, source: .url("https://example.com/f"))
        let fetcher = InMemoryFetcher(body: body, ranges: false)
        await #expect(throws: Crash.self) { _ = try await bench.run(runner: try bench.runner(fetcher: fetcher)) }
        recordsLeft.store(.max, ordering: .relaxed)
        bench.store.expireLease(job.id)
        bench.clock.advance(by: 30_001)
        let (outcome, done) = try await bench.run("b", runner: try bench.runner(fetcher: fetcher))
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(done.state == .completed && bench.objects.object("dst") == body)
        #expect(bench.objects.count(.uploadPart(1)) == 1 && bench.objects.count(.uploadPart(2)) == 1, "recorded parts are not sent again")
        #expect(bench.objects.count(.uploadPart(4)) == 1)
    }
}
