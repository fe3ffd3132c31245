import Adapters
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

/// A fetcher whose every read is a new slow stream of `chunks` chunks, one per `every` ms.
private struct SlowSources: SourceFetcher {
    let clock: ManualClock
    let chunks: Int
    let every: Int
    func probe(_ url: String) async throws -> SourceProbe { SourceProbe(size: nil, etag: nil, acceptsRanges: false) }
    func fetch(_ url: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile) async throws -> UInt32? {
        throw TransferError(code: .rangeIgnored, retryable: false)
    }
    func stream(_ url: String, limit: Int64) async throws -> any ByteSource {
        SlowStream(clock: clock, chunks: chunks, every: every)
    }
}

/// Slots shared across identities: fair claims, and jobs that give their slot back when
/// another identity waits (at a part boundary, or at once while they only wait for room).
@Suite struct JobWorkerFairnessTests {
    /// Claims go to the identity running fewest jobs: bob's job runs before alice's second,
    /// though hers is older.
    @Test func claimsAreFairAcrossIdentities() async throws {
        let bench = Bench()
        let aliceFirst = try await bench.insert(.copy, source: objectSource("src"), owner: "alice")
        bench.clock.advance(by: 10)
        let aliceSecond = try await bench.insert(.copy, source: objectSource("src"), owner: "alice")
        bench.clock.advance(by: 10)
        let bob = try await bench.insert(.copy, source: objectSource("src"), owner: "bob")
        let first = try #require(try await bench.store.claim(owner: "i", leaseMilliseconds: 30_000))
        let second = try #require(try await bench.store.claim(owner: "i", leaseMilliseconds: 30_000))
        #expect(first.0.id == aliceFirst.id)
        #expect(second.0.id == bob.id, "alice runs one already; bob runs none")
        #expect(try await bench.store.waitingOwners(limit: 10) == ["alice"])
        _ = aliceSecond
    }

    /// A job asked to yield hands itself back between parts: recorded parts stay, and any
    /// instance finishes it later without sending them again.
    @Test func aJobAskedToYieldHandsItselfBackBetweenParts() async throws {
        var bench = Bench()
        bench.settings.concurrency = 1
        bench.objects.put("src", bytes(20 * MiB, seed: 11))
        let job = try await bench.insert(.copy, source: objectSource("src"))
        let control = JobControl()
        control.requestYield()
        let (outcome, handedBack) = try await bench.run(control: control)
        #expect(outcome == .stopped(.queued))
        #expect(handedBack.partsCompleted == 1, "the part in flight finished; no new one started")
        let (done, finished) = try await bench.run("b")
        guard case .completed = done else { Issue.record("\(done)"); return }
        #expect(finished.id == job.id && bench.objects.object("dst") == bytes(20 * MiB, seed: 11))
        #expect(bench.objects.count(.copyPart(1)) == 1)
    }

    /// A streamed import (no ranges) asked to yield hands itself back once it has sent a part
    /// of its own, not at the end of its source; the next run reads the source again and sends
    /// only what S3 does not hold.
    @Test func aStreamedImportAskedToYieldHandsItselfBackAfterAPart() async throws {
        var bench = Bench()
        bench.settings.concurrency = 1
        let body = bytes(16 * MiB + 3, seed: 12)
        let job = try await bench.insert(.import, source: .url("https://example.com/f"))
        let fetcher = InMemoryFetcher(body: body, ranges: false)
        let control = JobControl()
        control.requestYield()
        let (outcome, handedBack) = try await bench.run(runner: try bench.runner(fetcher: fetcher), control: control)
        #expect(outcome == .stopped(.queued))
        #expect(handedBack.partsCompleted == 1, "one part sent, then the slot was given back")
        let (done, finished) = try await bench.run("b", runner: try bench.runner(fetcher: fetcher))
        guard case .completed = done else { Issue.record("\(done)"); return }
        #expect(finished.id == job.id && bench.objects.object("dst") == body)
        #expect(bench.objects.count(.uploadPart(1)) == 1, "the part sent before the yield is not sent again")
    }

    /// One slot asked of two jobs: the first to reach a part boundary gives it, the other runs
    /// to its end (both giving theirs would re-read a source for nothing).
    @Test func oneRequestFreesOneSlot() async throws {
        var bench = Bench()
        bench.settings.concurrency = 1
        bench.objects.put("src", bytes(20 * MiB, seed: 13))
        try await bench.insert(.copy, source: objectSource("src"), key: "one")
        try await bench.insert(.copy, source: objectSource("src"), key: "two")
        let store = bench.store, runner = try bench.runner()
        let first = try #require(try await store.claim(owner: "i", leaseMilliseconds: 30_000))
        let second = try #require(try await store.claim(owner: "i", leaseMilliseconds: 30_000))
        let request = SlotRequest()
        let controls = [JobControl(), JobControl()]
        for control in controls { control.requestYield(request) }
        let outcomes = try await driving(bench.clock) {
            async let one = runner.run(first.0, lease: first.1, control: controls[0])
            async let two = runner.run(second.0, lease: second.1, control: controls[1])
            return try await [one, two]
        }
        #expect(outcomes.filter { $0 == .stopped(.queued) }.count == 1, "\(outcomes)")
        #expect(outcomes.filter { if case .completed = $0 { true } else { false } }.count == 1, "\(outcomes)")
    }

    /// A request withdrawn before any job took it (another slot came free) asks nothing more.
    @Test func aWithdrawnRequestAsksNothing() async throws {
        var bench = Bench()
        bench.settings.concurrency = 1
        bench.objects.put("src", bytes(20 * MiB, seed: 14))
        try await bench.insert(.copy, source: objectSource("src"))
        let control = JobControl()
        control.requestYield()
        control.withdrawYield()
        #expect(!control.yieldRequested)
        let (outcome, finished) = try await bench.run(control: control)
        guard case .completed = outcome else { Issue.record("\(outcome)"); return }
        #expect(finished.partsCompleted == 4)
    }

    /// An import waiting for room on a full spool gives its slot back at once when asked: it
    /// has moved nothing, so it loses nothing.
    @Test func anImportWaitingForRoomGivesItsSlotBack() async throws {
        var bench = Bench()
        bench.spoolBudget = 10 * Int64(MiB)
        let spool = try DirectorySpool(directory: bench.spoolDirectory, budget: bench.spoolBudget)
        try await spool.reserve(jobID: "someone-else", name: .part(1), bytes: 8 * Int64(MiB), owner: "someone-else")
        let job = try await bench.insert(.import, source: .url("https://example.com/f"))
        let control = JobControl()
        let asked = Task {
            // Asked once the import waits for room (nothing else runs).
            while bench.store.leaseHolder(job.id) == nil { await Task.yield() }
            control.requestYield()
        }
        let fetcher = InMemoryFetcher(body: bytes(10 * MiB, seed: 7), ranges: true)
        let (outcome, _) = try await bench.run(runner: try bench.runner(spool: spool, fetcher: fetcher), control: control)
        await asked.value
        #expect(outcome == .stopped(.queued))
        #expect(bench.objects.count(.uploadPart(1)) == 0, "the import sent nothing")
        #expect(spool.usage.used == 8 * Int64(MiB), "its wait held nothing")
    }

    /// Both slots of an instance busy with one identity's endless slow imports: another
    /// identity's copy gets a slot after about one part of theirs, not after their sources end.
    @Test func anotherIdentitysJobRunsWithinAboutAPart() async throws {
        var bench = Bench()
        bench.settings.concurrency = 1
        bench.objects.put("small", bytes(16, seed: 3))
        // 64 KiB every 100 ms: a 5 MiB part takes 8 s; a source, about 100 minutes.
        let sources = SlowSources(clock: bench.clock, chunks: 60_000, every: 100)
        let imports = [
            try await bench.insert(.import, source: .url("https://example.com/1"), key: "a1", owner: "alice"),
            try await bench.insert(.import, source: .url("https://example.com/2"), key: "a2", owner: "alice"),
        ]
        let spool = try DirectorySpool(directory: bench.spoolDirectory, budget: bench.spoolBudget)
        let worker = JobWorker(
            store: bench.store, objects: bench.objects, fetcher: sources, spool: spool, settings: bench.settings,
            clock: bench.clock, instance: "i", slots: 2)
        worker.start()
        let store = bench.store, clock = bench.clock
        let started = try await driving(clock, limit: 400) {
            while store.leaseHolder(imports[0].id) == nil || store.leaseHolder(imports[1].id) == nil {
                try await clock.sleep(milliseconds: 50)
            }
            return clock.now()
        }
        let copy = try await bench.insert(.copy, source: objectSource("small"), key: "b1", owner: "bob")
        let finished = try await driving(clock, limit: 2_000) {
            while try await store.job(id: copy.id)?.state != .completed { try await clock.sleep(milliseconds: 50) }
            return clock.now()
        }
        let aliceStates = try await imports.asyncMap { try await store.job(id: $0.id)?.state }
        await worker.stop()
        #expect(finished - started <= 12_000, "bob waited \(finished - started) ms; one part of alice's takes 8,000")
        #expect(!aliceStates.contains(.completed), "alice's sources are far from their end")
        #expect(bench.objects.object("b1") == bytes(16, seed: 3))
    }
}

extension JobWorkerFairnessTests {
    /// Every slot (and more) held by one identity's one-part imports, which have no part
    /// boundary to yield at: another identity's copy starts within 2 s anyway, in the slot kept
    /// for identities that run nothing here; the kept slot takes nobody already running.
    @Test func anotherIdentitysJobStartsWithinTwoSecondsWhenEverySlotHoldsOnePartJobs() async throws {
        let bench = Bench()
        bench.objects.put("small", bytes(16, seed: 3))
        // 40 chunks of 64 KiB, one a second: one part each, 40 s from start to end.
        let sources = SlowSources(clock: bench.clock, chunks: 40, every: 1000)
        var inserted: [Job] = []
        for n in 0..<6 {
            inserted.append(
                try await bench.insert(
                    .import, source: .url("https://example.com/\(n)"), key: "a\(n)",
                    owner: "alice"))
        }
        let imports = inserted
        let spool = try DirectorySpool(directory: bench.spoolDirectory, budget: bench.spoolBudget)
        let worker = JobWorker(
            store: bench.store, objects: bench.objects, fetcher: sources, spool: spool, settings: bench.settings,
            clock: bench.clock, instance: "i", slots: 4)
        #expect(worker.keptSlots == 1)
        worker.start()
        let store = bench.store, clock = bench.clock
        let started = try await driving(clock, limit: 400) {
            while imports.filter({ store.leaseHolder($0.id) != nil }).count < 4 { try await clock.sleep(milliseconds: 50) }
            try await clock.sleep(milliseconds: 1000)
            return clock.now()
        }
        let running = imports.filter { store.leaseHolder($0.id) != nil }.count
        #expect(running == 4, "alice holds the four ordinary slots; the kept one is not hers (\(running) running)")
        let copy = try await bench.insert(.copy, source: objectSource("small"), key: "b1", owner: "bob")
        let began = try await driving(clock, limit: 400) {
            while try await store.job(id: copy.id)?.state == .queued { try await clock.sleep(milliseconds: 10) }
            return clock.now()
        }
        let aliceStates = try await imports.asyncMap { try await store.job(id: $0.id)?.state }
        await worker.stop()
        #expect(began - started <= 2_000, "bob's copy waited \(began - started) ms")
        #expect(!aliceStates.contains(.completed), "alice's sources are far from their end")
    }
}

private extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
