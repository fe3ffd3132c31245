import Adapters
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import TransferEngine

/// The engine with in-memory ports, a manual clock and small budgets.
struct Bench {
    let clock = ManualClock()
    let store: InMemoryJobStore
    let objects: InMemoryObjectStore
    var settings = EngineSettings()
    let spoolDirectory = NSTemporaryDirectory() + "bounds-spool-" + UUID().uuidString
    var spoolBudget: Int64 = 1 << 30

    init(objects: ((ManualClock) -> InMemoryObjectStore)? = nil, beforeWrite: @escaping @Sendable (String) throws -> Void = { _ in }) {
        store = InMemoryJobStore(clock: clock, beforeWrite: beforeWrite)
        self.objects = objects?(clock) ?? InMemoryObjectStore(clock: clock)
        settings.concurrency = 2
        settings.leaseMilliseconds = 30_000
        settings.backoff = Backoff(baseMilliseconds: 100, capMilliseconds: 1000)
    }

    func runner(spool: DirectorySpool? = nil, fetcher: (any SourceFetcher)? = nil) throws -> JobRunner {
        JobRunner(
            store: store, objects: objects, fetcher: fetcher,
            spool: try spool ?? DirectorySpool(directory: spoolDirectory, budget: spoolBudget), settings: settings, clock: clock)
    }

    @discardableResult
    func insert(
        _ kind: Job.Kind, source: JobSource, key: String = "dst", owner: String = "alice",
        options: JobOptions = JobOptions()
    ) async throws -> Job {
        try await store.insert(
            Job(
                id: UUID().uuidString.lowercased(), owner: owner, kind: kind, state: .queued, objectKey: key,
                source: source, options: options, bytesTotal: nil, partSize: settings.partSize))
    }

    func run(_ owner: String = "a", runner: JobRunner? = nil, control: JobControl = JobControl()) async throws -> (JobRunner.Outcome, Job) {
        guard let (job, lease) = try await store.claim(owner: owner, leaseMilliseconds: settings.leaseMilliseconds) else {
            throw NothingToClaim()
        }
        let runner = try runner ?? self.runner()
        let outcome = try await driving(clock) { try await runner.run(job, lease: lease, control: control) }
        return (outcome, try #require(try await store.job(id: job.id)))
    }
}

/// A stream that hands out a chunk every `every` milliseconds of the manual clock.
final class SlowStream: ByteSource {
    let clock: ManualClock
    let chunks: Int
    let every: Int
    let read = Atomic<Int>(0)

    init(clock: ManualClock, chunks: Int, every: Int) {
        self.clock = clock
        self.chunks = chunks
        self.every = every
    }

    func next() async throws -> ArraySlice<UInt8>? {
        guard read.load(ordering: .relaxed) < chunks else { return nil }
        try await clock.sleep(milliseconds: every)
        read.add(1, ordering: .relaxed)
        return [UInt8](repeating: 7, count: 64 * 1024)[...]
    }
}

struct SlowFetcher: SourceFetcher {
    let stream: SlowStream
    func probe(_ url: String) async throws -> SourceProbe { SourceProbe(size: nil, etag: nil, acceptsRanges: false) }
    func fetch(_ url: String, range: ClosedRange<Int64>, ifMatch: String?, into file: SpoolFile) async throws -> UInt32? {
        throw TransferError(code: .rangeIgnored, retryable: false)
    }
    func stream(_ url: String, limit: Int64) async throws -> any ByteSource { stream }
}

/// A rig asked to run a job when none is waiting: the test is wrong.
struct NothingToClaim: Error {}
