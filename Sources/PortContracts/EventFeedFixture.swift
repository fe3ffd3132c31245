import Foundation
import Gateway
import TestSupport
import TransferEngine

/// The event feed as `EventFeedContract` sees it, with a way to make the changes it tells of: a
/// download job, complete once stored, which the feed records as `job.created` then
/// `job.completed` (no worker claims it, and no clean-up of other suites touches it). In
/// PostgreSQL the insert's trigger records them; the twins have no triggers, so `inMemory()`
/// records them beside the insert as the trigger would.
public struct EventFeedFixture: ContractFixture {
    public let feed: any EventFeed
    /// Unique to this fixture: every owner a case names carries it.
    public let tag: String
    private let creator: @Sendable (Job) async throws -> Void
    private let ager: @Sendable (Int) async throws -> Void
    private let cleanup: @Sendable () async -> Void

    /// `create`: stores the job (the feed records its creation). `age`: makes `milliseconds`
    /// pass for the fixture's events. `tearDown`: removes the fixture's rows.
    public init(
        feed: any EventFeed, tag: String, create: @escaping @Sendable (Job) async throws -> Void,
        age: @escaping @Sendable (Int) async throws -> Void, tearDown: @escaping @Sendable () async -> Void = {}
    ) {
        self.feed = feed
        self.tag = tag
        self.creator = create
        self.ager = age
        self.cleanup = tearDown
    }

    /// An identity of this fixture's own, named `name`.
    public func owner(_ name: String) -> String { "\(name)-\(tag)" }

    /// A completed download job of `owner`'s, stored: the feed now holds its `job.created` and
    /// its `job.completed`.
    @discardableResult
    public func createJob(owner: String) async throws -> Job {
        var job = Job(
            id: UUID().uuidString.lowercased(), owner: owner, kind: .download, state: .completed,
            objectKey: "private/\(owner)/file", source: .object(ObjectSource(key: "private/\(owner)/file")), bytesTotal: 4,
            partSize: 5 << 20)
        job.etag = "\"etag\""
        job.bytesTransferred = 4
        job.bytesCommitted = 4
        try await creator(job)
        return job
    }

    /// As if `milliseconds` had passed since the fixture's events were recorded.
    public func age(milliseconds: Int) async throws { try await ager(milliseconds) }

    public func tearDown() async { await cleanup() }

    /// The twins on one manual clock: the job store, and the feed recording what a trigger would.
    public static func inMemory() -> EventFeedFixture {
        let clock = ManualClock(start: 1_800_000_000_000)
        let jobs = InMemoryJobStore(clock: clock)
        let feed = InMemoryEventFeed(now: { Int64(clock.now()) })
        return EventFeedFixture(
            feed: feed, tag: String(UUID().uuidString.prefix(8)).lowercased(),
            create: { job in
                let stored = try await jobs.insert(job, quota: nil)
                feed.record(owner: stored.owner, type: "job.created", subject: .job(stored))
                feed.record(owner: stored.owner, type: "job.completed", subject: .job(stored))
            },
            age: { clock.advance(by: $0) })
    }
}
