import Synchronization
import Testing
import TransferEngine

/// One process's key locks: a key has one holder at a time, waiters are served in order of
/// arrival, other keys are not held up, and a stale token frees nothing.
@Suite struct ProcessKeyLocksTests {
    /// What the holders saw, shared by the tasks.
    final class Tally: Sendable {
        struct Counts {
            var inside = 0, most = 0
            var order: [Int] = []
            var freed = false
        }
        let counts = Mutex(Counts())
    }

    @Test func holdersOfOneKeyTakeTurnsInOrder() async throws {
        let locks = ProcessKeyLocks()
        let first = try await locks.lock("a")
        let tally = Tally()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await locks.withLock("a") {
                        tally.counts.withLock {
                            $0.inside += 1
                            $0.most = max($0.most, $0.inside)
                            $0.order.append(index)
                        }
                        await Task.yield()
                        tally.counts.withLock { $0.inside -= 1 }
                    }
                }
            }
            // Another key is free while "a" is held.
            let other = try await locks.lock("b")
            await locks.unlock(other)
            await locks.unlock(first)
            try await group.waitForAll()
        }
        let counts = tally.counts.withLock { $0 }
        #expect(counts.most == 1, "one holder at a time")
        #expect(counts.order.count == 20)
    }

    @Test func aStaleTokenFreesNothing() async throws {
        let locks = ProcessKeyLocks()
        let held = try await locks.lock("k")
        await locks.unlock(KeyLockToken(key: "k", holder: "someone else"))
        let waiter = Task { try await locks.lock("k") }
        let tally = Tally()
        let watcher = Task {
            _ = try await waiter.value
            tally.counts.withLock { $0.freed = true }
        }
        for _ in 0..<50 { await Task.yield() }
        let freedEarly = tally.counts.withLock { $0.freed }
        #expect(!freedEarly, "the key is still held")
        await locks.unlock(held)
        try await watcher.value
        await locks.unlock(try await waiter.value)
    }
}
