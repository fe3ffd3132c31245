import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

private let MiB = 1 << 20

/// The read-ahead of a download's data over the in-memory store: blocks in order, each
/// reserved for the job's owner before its read, and dropped to the one in hand when the client
/// stops reading.
@Suite struct ReadAheadTests {
    static func object(_ size: Int) -> [UInt8] { repeatingBytes(size, seed: 9) }

    static func setUp(
        size: Int, capacity: Int, share: Int? = nil, objects: InMemoryObjectStore = InMemoryObjectStore()
    ) async throws -> (ReadAhead, ByteBudget, [UInt8]) {
        let body = object(size)
        objects.put("k", body)
        let etag = try await objects.properties(of: "k").etag
        let budget = ByteBudget(capacity: Int64(capacity), ownerShare: share.map(Int64.init))
        let reads = ReadAhead(
            objects: objects, budget: budget, owner: "alice", key: "k", etag: etag, from: 0, length: Int64(size),
            block: Int64(4 * MiB), depth: 4)
        return (reads, budget, body)
    }

    /// Reads the rest of the range onto `got`, handing each block back once taken.
    static func readRecycling(_ reads: ReadAhead, onto got: inout [UInt8]) async throws {
        while let block = try await reads.next() {
            got += block.bytes
            reads.recycle(consume block)
        }
    }

    /// Polls `condition` every 2 ms for up to 5 s; whether it came true.
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<2500 where !condition() { try await Task.sleep(for: .milliseconds(2)) }
        return condition()
    }

    @Test func blocksComeInOrderAndEachIsReservedForTheOwner() async throws {
        let (reads, budget, body) = try await Self.setUp(size: 18 * MiB + 5, capacity: 256 * MiB)
        #expect(try await reads.begin(waitingAtMost: 100))
        #expect(budget.held(by: "alice") == 16 * Int64(MiB), "four blocks ahead, reserved one by one")
        var got: [UInt8] = []
        while let block = try await reads.next() {
            got += block.bytes
            #expect(budget.used <= 20 * Int64(MiB), "the ones ahead and the one in hand")
            block.held.release()
        }
        #expect(got == body)
        reads.cancel()
        #expect(budget.used == 0)
    }

    /// A client that stops reading holds the block in hand; the reads ahead go and are read
    /// again, from where they were, once it reads on.
    @Test func shrinkKeepsOnlyTheBlockInHandAndTheDataStaysWhole() async throws {
        let (reads, budget, body) = try await Self.setUp(size: 30 * MiB, capacity: 256 * MiB)
        #expect(try await reads.begin(waitingAtMost: 100))
        var got: [UInt8] = []
        let first = try #require(try await reads.next())
        got += first.bytes
        reads.shrink()
        #expect(budget.used == 4 * Int64(MiB), "only the block in hand")
        first.held.release()
        while let block = try await reads.next() {
            got += block.bytes
            block.held.release()
        }
        #expect(got == body)
        reads.cancel()
        #expect(budget.used == 0)
    }

    /// Blocks handed back are read into again: past the first window and the read started as
    /// the first block is taken, every read lands in the memory of a block written, and the
    /// budget never holds more than the window and the block in hand (or its spare).
    @Test func recycledBlocksAreReadIntoAgainWithinTheWindowsBudget() async throws {
        let objects = InMemoryObjectStore()
        let (reads, budget, body) = try await Self.setUp(size: 40 * MiB + 3, capacity: 256 * MiB, objects: objects)
        #expect(try await reads.begin(waitingAtMost: 100))
        var got: [UInt8] = []
        while let block = try await reads.next() {
            got += block.bytes
            #expect(budget.used <= 20 * Int64(MiB), "the ones ahead and the one in hand")
            reads.recycle(consume block)
            #expect(budget.used <= 20 * Int64(MiB), "the ones ahead and the spare")
        }
        #expect(got == body)
        // 11 blocks: 5 in new memory (the window of 4, and the read started as the first is
        // taken), the 6 others in blocks handed back, held by nothing else (not copied on write).
        #expect(objects.readsIntoGivenMemory.load(ordering: .relaxed) == 6)
        #expect(budget.used == 0, "no spare block is kept once no read is left to start")
        reads.cancel()
    }

    /// While another reservation waits for the budget, a block written is given back, not kept
    /// for the next read: freed bytes go to the waiters first.
    @Test func aBlockWrittenGoesToAWaiterBeforeTheNextRead() async throws {
        let (reads, budget, body) = try await Self.setUp(size: 40 * MiB, capacity: 20 * MiB)
        #expect(try await reads.begin(waitingAtMost: 100))
        var got: [UInt8] = []
        let first = try #require(try await reads.next())
        got += first.bytes
        #expect(budget.used == 20 * Int64(MiB), "the window and the block in hand fill the budget")
        let waiter = Task { try await budget.reserve(4 * Int64(MiB), owner: "bob") }
        #expect(try await Self.eventually { budget.waiting == 1 })
        reads.recycle(consume first)
        #expect(
            try await Self.eventually { budget.held(by: "bob") == 4 * Int64(MiB) },
            "the waiter has the written block's bytes, the download goes on")
        try await Self.readRecycling(reads, onto: &got)
        #expect(got == body)
        reads.cancel()
        try await waiter.value.release()
        #expect(budget.used == 0)
    }

    /// A stall gives the spare blocks back with the reads ahead: nothing stays reserved for a
    /// client that is not reading but the block in hand.
    @Test func shrinkGivesTheSpareBlocksBack() async throws {
        let (reads, budget, body) = try await Self.setUp(size: 30 * MiB, capacity: 256 * MiB)
        #expect(try await reads.begin(waitingAtMost: 100))
        var got: [UInt8] = []
        let first = try #require(try await reads.next())
        got += first.bytes
        reads.recycle(consume first)
        let second = try #require(try await reads.next())
        got += second.bytes
        reads.recycle(second)
        reads.shrink()
        #expect(budget.used == 0, "the reads ahead and the spare blocks went back")
        try await Self.readRecycling(reads, onto: &got)
        #expect(got == body)
        reads.cancel()
        #expect(budget.used == 0)
    }

    /// One identity's share bounds how far it reads ahead; the first block waits for room and
    /// gives up after the wait when there is none.
    @Test func theOwnersShareBoundsTheWindow() async throws {
        let (reads, budget, body) = try await Self.setUp(size: 30 * MiB, capacity: 256 * MiB, share: 8 * MiB)
        #expect(try await reads.begin(waitingAtMost: 100))
        #expect(budget.held(by: "alice") == 8 * Int64(MiB), "two blocks: the share")
        var got: [UInt8] = []
        while let block = try await reads.next() {
            got += block.bytes
            block.held.release()
        }
        #expect(got == body)
        reads.cancel()
        // The share is held elsewhere: a new stream of the same owner finds no room.
        let hog = try #require(budget.tryReserve(8 * Int64(MiB), owner: "alice"))
        let blocked = ReadAhead(
            objects: InMemoryObjectStore(), budget: budget, owner: "alice", key: "k", etag: "\"x\"", from: 0,
            length: Int64(MiB), block: Int64(4 * MiB), depth: 4)
        #expect(try await !blocked.begin(waitingAtMost: 50), "no room within the wait: the route answers 503")
        let other = ReadAhead(
            objects: InMemoryObjectStore(), budget: budget, owner: "bob", key: "k", etag: "\"x\"", from: 0,
            length: Int64(MiB), block: Int64(4 * MiB), depth: 4)
        #expect(try await other.begin(waitingAtMost: 50), "another identity is not held up")
        other.cancel()
        hog.release()
    }
}
