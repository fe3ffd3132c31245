import Adapters
import Synchronization
import TestSupport
import Testing

@testable import TransferEngine

/// A worker told that a job was queued claims it at once, not at its next poll.
@Suite struct JobWorkerWakeTests {
    /// The worker rests for an hour of the manual clock between polls; word of the queued job
    /// starts it within a second. Without the word the job would wait out the hour.
    @Test func wordOfAQueuedJobStartsItBeforeTheNextPoll() async throws {
        let bench = Bench()
        bench.objects.put("small", repeatingBytes(16, seed: 3))
        let bell = Doorbell()
        let worker = JobWorker(
            store: bench.store, objects: bench.objects, settings: bench.settings, clock: bench.clock, instance: "i",
            slots: 1, pollMilliseconds: 3_600_000, signals: bell)
        worker.start()
        #expect(
            await poll { bell.waiting == 1 && bench.clock.deadlines.contains(bench.clock.now() + 3_600_000) },
            "the worker found nothing and rests")
        let store = bench.store, clock = bench.clock
        let copy = try await bench.insert(.copy, source: .object(ObjectSource(key: "small")), key: "b1", owner: "bob")
        let asked = clock.now()
        bell.ring(JobWorker.queuedSignal)
        let began = try await driving(clock, limit: 400) {
            while try await store.job(id: copy.id)?.state == .queued { try await clock.sleep(milliseconds: 10) }
            return clock.now()
        }
        await worker.stop()
        #expect(began - asked <= 1_000, "the copy waited \(began - asked) ms")
    }

    /// With every ordinary slot busy the worker does not wait for word (each new job would only
    /// mean another query; the slot kept for other identities is filled at the poll): it sleeps
    /// to its next poll.
    @Test func aWorkerWithNoFreeSlotDoesNotListen() async throws {
        var bench = Bench()
        bench.settings.concurrency = 1
        let bell = Doorbell()
        let sources = SilentSources()
        let spool = try DirectorySpool(directory: bench.spoolDirectory, budget: bench.spoolBudget)
        let worker = JobWorker(
            store: bench.store, objects: bench.objects, fetcher: sources, spool: spool, settings: bench.settings,
            clock: bench.clock, instance: "i", slots: 1, pollMilliseconds: 3_600_000, signals: bell)
        // One job fills the ordinary slot; the one kept for another identity is free.
        try await bench.insert(.import, source: .url("https://example.com/1"), key: "a1", owner: "alice")
        worker.start()
        #expect(await poll { worker.activeJobs == 1 && sources.opened.load(ordering: .relaxed) == 1 })
        // The worker rests until its next poll, and listens to nothing meanwhile.
        let clock = bench.clock, restsUntil = clock.now() + 3_600_000
        #expect(await poll { clock.deadlines.contains(restsUntil) })
        #expect(bell.waiting == 0)
        await worker.stop()
    }

    /// Word that brings nothing to claim (another instance was first) is not waited for again
    /// before a poll: signals that answer at once cannot make the worker query in a loop.
    @Test func wordThatBringsNothingIsNotWaitedForAgainBeforeAPoll() async throws {
        let bench = Bench()
        let bell = Doorbell()
        let worker = JobWorker(
            store: bench.store, objects: bench.objects, settings: bench.settings, clock: bench.clock, instance: "i",
            slots: 1, pollMilliseconds: 3_600_000, signals: bell)
        worker.start()
        let clock = bench.clock, firstPoll = clock.now() + 3_600_000
        #expect(await poll { bell.waiting == 1 && clock.deadlines == [firstPoll] })
        clock.advance(by: 1_000)
        bell.ring(JobWorker.queuedSignal)
        // Nothing was queued: the worker sleeps a whole poll from now, without listening.
        let secondPoll = clock.now() + 3_600_000
        #expect(await poll { bell.waiting == 0 && clock.deadlines == [secondPoll] })
        clock.advance(by: 3_600_000)
        // After the poll it listens again.
        #expect(await poll { bell.waiting == 1 })
        await worker.stop()
    }
}

/// A `JobSignals` a test rings by hand.
final class Doorbell: JobSignals {
    private let waiters = Mutex<[(id: String, key: Int, continuation: CheckedContinuation<Void, Never>)]>([])
    private let keys = Atomic<Int>(0)

    /// Waiters now.
    var waiting: Int { waiters.withLock { $0.count } }

    func changed(_ id: String) async {
        let key = keys.add(1, ordering: .relaxed).newValue
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = waiters.withLock { w -> Bool in
                    if Task.isCancelled { return true }
                    w.append((id, key, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let gone = waiters.withLock { w -> CheckedContinuation<Void, Never>? in
                guard let index = w.firstIndex(where: { $0.key == key }) else { return nil }
                return w.remove(at: index).continuation
            }
            gone?.resume()
        }
    }

    /// Wakes every waiter on `id`.
    func ring(_ id: String) {
        let woken = waiters.withLock { w -> [CheckedContinuation<Void, Never>] in
            let ringing = w.filter { $0.id == id }
            w.removeAll { $0.id == id }
            return ringing.map(\.continuation)
        }
        for continuation in woken { continuation.resume() }
    }
}

/// Sources that never send a byte (jobs that hold their slots).
private final class SilentSources: SourceFetcher {
    let opened = Atomic<Int>(0)

    func probe(_ url: String) async throws -> SourceProbe { SourceProbe(size: nil, etag: nil, acceptsRanges: false) }
    func fetch(_ url: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile) async throws -> UInt32? {
        throw TransferError.sourceChanged
    }
    func stream(_ url: String, limit: Int64) async throws -> any ByteSource {
        opened.add(1, ordering: .relaxed)
        return Silence()
    }
}

private struct Silence: ByteSource {
    func next() async throws -> ArraySlice<UInt8>? {
        try await Task.sleep(for: .seconds(3600))
        return nil
    }
}
