import Synchronization
import Testing

@testable import TransferEngine

@Suite struct ByteBudgetTests {
    @Test func reservationsNeverPassTheCapacityAndAWaiterThatDoesNotFitHoldsNobodyUp() async throws {
        let budget = ByteBudget(capacity: 10)
        let first = try await budget.reserve(6)
        #expect(budget.tryReserve(5) == nil && budget.used == 6)
        let big = Task { try await budget.reserve(8) }
        while budget.waiting == 0 { try await Task.sleep(for: .milliseconds(1)) }
        // A small request arriving after the big one that does not fit is not held up by it.
        let small = try #require(budget.tryReserve(1), "a smaller reservation that fits goes ahead of one that does not")
        #expect(budget.used == 7)
        small.release()
        first.release()
        let granted = try await big.value
        #expect(budget.used == 8 && granted.bytes == 8)
        granted.shrink(to: 3)
        #expect(budget.used == 3)
        granted.release()
        granted.release()
        #expect(budget.used == 0, "released once")
    }

    /// The large one still gets its turn: bytes given back go to the waiters, oldest first,
    /// before a newcomer can take them.
    @Test func freedBytesGoToTheOldestWaiterThatFitsBeforeANewcomer() async throws {
        let budget = ByteBudget(capacity: 10)
        let held = try await budget.reserve(9)
        let big = Task { try await budget.reserve(8) }
        while budget.waiting == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let later = Task { try await budget.reserve(2) }
        while budget.waiting < 2 { try await Task.sleep(for: .milliseconds(1)) }
        held.release()
        let granted = try await big.value
        let second = try await later.value
        #expect(granted.bytes == 8 && second.bytes == 2 && budget.used == 10)
        #expect(budget.tryReserve(1) == nil, "full")
    }

    /// No identity holds more than its share: its next reservation waits (or is refused when it
    /// could never fit), while other identities' reservations go ahead.
    @Test func oneIdentityHoldsAtMostItsShare() async throws {
        let budget = ByteBudget(capacity: 100, ownerShare: 25)
        let a1 = try await budget.reserve(20, owner: "a")
        #expect(budget.tryReserve(6, owner: "a") == nil, "26 would pass a's share of 25")
        await #expect(throws: ByteBudget.TooLarge.self) { _ = try await budget.reserve(26, owner: "a") }
        let waiting = Task { try await budget.reserve(10, owner: "a") }
        while budget.waiting == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let b = try #require(budget.tryReserve(25, owner: "b"), "another identity is not held up by a's waiter")
        let c = try #require(budget.tryReserve(25, owner: "c"))
        #expect(budget.held(by: "a") == 20 && budget.held(by: "b") == 25 && budget.used == 70)
        a1.release()
        let a2 = try await waiting.value
        #expect(budget.held(by: "a") == 10 && a2.bytes == 10)
        a2.shrink(to: 4)
        #expect(budget.held(by: "a") == 4 && budget.used == 54)
        _ = (b, c)
    }

    @Test func moreThanTheCapacityIsRefusedAtOnceAndCancelledWaitersLeave() async throws {
        let budget = ByteBudget(capacity: 10)
        await #expect(throws: ByteBudget.TooLarge.self) { _ = try await budget.reserve(11) }
        let held = try await budget.reserve(10)
        let waiter = Task { try await budget.reserve(5) }
        while budget.waiting == 0 { try await Task.sleep(for: .milliseconds(1)) }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiter.value }
        held.release()
        #expect(budget.tryReserve(10) != nil, "the cancelled waiter holds nothing")
    }

    @Test func aReservationGoesBackWhenDropped() async throws {
        let budget = ByteBudget(capacity: 4)
        do { _ = try await budget.reserve(4) }
        #expect(budget.used == 0)
        #expect(try await budget.reserve(4, waitingAtMost: 10) != nil)
        let held = budget.tryReserve(4)
        #expect(try await budget.reserve(1, waitingAtMost: 10) == nil, "no room within the wait")
        _ = held
    }
}
