import Gateway
import Testing
import TransferEngine

/// The event feed's contract (`EventFeed`), as PostgreSQL's triggers and `PostgresEventFeed`
/// keep it: `InMemoryEventFeed` must behave the same. Run by `EventFeedContractTests` (the twin)
/// and `EventFeedContractLiveTests` (PostgreSQL).
public enum EventFeedContract {
    /// Every case, in the order they are listed.
    public static let cases: [ContractCase<EventFeedFixture>] = [
        eachIdentityIsNumberedFromOneWithNoGaps, aSweepDropsOldEventsAndTheNumberingGoesOn, objectChangesAreNumberedWithTheRest,
    ]

    static let objectChangesAreNumberedWithTheRest = ContractCase<EventFeedFixture>(
        "an object change recorded by a route is numbered with the job events and read back as it was recorded"
    ) { f in
        let alice = f.owner("alice")
        let job = try await f.createJob(owner: alice)
        let deleted = ObjectChange(
            source: .init(accessLevel: "private", key: "a/ü.txt", identityId: alice, objectKey: "private/\(alice)/a/ü.txt"))
        let moved = ObjectChange(
            source: .init(accessLevel: "public", key: "x", identityId: nil, objectKey: "public/x"),
            destination: .init(accessLevel: "protected", key: "y", identityId: alice, objectKey: "protected/\(alice)/y"), size: 12,
            etag: "\"e\"")
        try await f.feed.record(owner: alice, type: "object.deleted", change: deleted)
        try await f.feed.record(owner: alice, type: "object.moved", change: moved)
        let all = try await f.feed.events(owner: alice, after: 0, limit: 10)
        #expect(all.map(\.sequence) == [1, 2, 3, 4])
        #expect(all.map(\.type) == ["job.created", "job.completed", "object.deleted", "object.moved"])
        #expect(all.map(Self.subjectID) == [job.id, job.id, "private/\(alice)/a/ü.txt", "public/x"])
        #expect(all.dropFirst(2).map(\.subject) == [.object(deleted), .object(moved)])
        #expect(try await f.feed.events(owner: alice, after: 3, limit: 10).map(\.type) == ["object.moved"])
        #expect(try await f.feed.latest(owner: alice) == 4)
    }

    static let eachIdentityIsNumberedFromOneWithNoGaps = ContractCase<EventFeedFixture>(
        "each identity's events are numbered 1, 2, 3…, read after a number, oldest first, at most a limit, and nobody else's"
    ) { f in
        let alice = f.owner("alice"), bob = f.owner("bob"), carol = f.owner("carol")
        #expect(try await f.feed.latest(owner: alice) == 0)
        var made: [Job] = []
        for _ in 0..<3 { made.append(try await f.createJob(owner: alice)) }
        let bobs = try await f.createJob(owner: bob)
        let all = try await f.feed.events(owner: alice, after: 0, limit: 10)
        #expect(all.map(\.sequence) == [1, 2, 3, 4, 5, 6])
        #expect(all.map(\.type) == Array(repeating: ["job.created", "job.completed"], count: 3).flatMap { $0 })
        #expect(all.map(Self.subjectID) == made.flatMap { [$0.id, $0.id] })
        if case .job(let job) = all.first?.subject {
            #expect(job.state == .completed && job.owner == alice && job.objectKey == made[0].objectKey && job.bytesTotal == 4)
        } else {
            Issue.record("the event's subject is not the job")
        }
        #expect(all.map(\.createdAt) == all.map(\.createdAt).sorted() && all.allSatisfy { $0.createdAt > 0 })
        #expect(try await f.feed.events(owner: alice, after: 1, limit: 1).map(\.sequence) == [2])
        #expect(try await f.feed.events(owner: alice, after: 2, limit: 3).map(\.sequence) == [3, 4, 5])
        #expect(try await f.feed.events(owner: alice, after: 6, limit: 10).isEmpty)
        #expect(try await f.feed.latest(owner: alice) == 6)
        #expect(try await f.feed.events(owner: bob, after: 0, limit: 10).map(Self.subjectID) == [bobs.id, bobs.id])
        #expect(try await f.feed.events(owner: bob, after: 0, limit: 10).map(\.sequence) == [1, 2])
        #expect(try await f.feed.events(owner: carol, after: 0, limit: 10).isEmpty)
        #expect(try await f.feed.latest(owner: carol) == 0)
    }

    static let aSweepDropsOldEventsAndTheNumberingGoesOn = ContractCase<EventFeedFixture>(
        "a sweep drops the events older than its cut, keeps the newer, and numbers are never given twice"
    ) { f in
        let alice = f.owner("alice")
        try await f.createJob(owner: alice)
        try await f.createJob(owner: alice)
        try await f.age(milliseconds: 2 * 86_400_000)
        let kept = try await f.createJob(owner: alice)
        #expect(try await f.feed.sweep(olderThanSeconds: 86_400) >= 4)
        let left = try await f.feed.events(owner: alice, after: 0, limit: 10)
        #expect(left.map(\.sequence) == [5, 6] && left.map(Self.subjectID) == [kept.id, kept.id])
        #expect(try await f.feed.latest(owner: alice) == 6)
        try await f.createJob(owner: alice)
        #expect(try await f.feed.events(owner: alice, after: 6, limit: 10).map(\.sequence) == [7, 8])
    }

    static func subjectID(_ event: FeedEvent) -> String {
        switch event.subject {
        case .job(let job): return job.id
        case .upload(let upload): return upload.id
        case .object(let change): return change.source.objectKey
        }
    }
}
