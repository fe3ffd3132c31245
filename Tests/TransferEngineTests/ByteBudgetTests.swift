import Synchronization
import Testing
@testable import TransferEngine

@Suite struct ByteBudgetTests {
    @Test func reservationsNeverPassTheCapacityAndWaitersGoInOrder() async throws {
        let budget = ByteBudget(capacity: 10)
        let first = try await budget.reserve(6)
        #expect(budget.tryReserve(5) == nil && budget.used == 6)
        let order = Mutex<[Int]>([])
        let big = Task { let r = try await budget.reserve(8); order.withLock { $0.append(8) }; return r }
        while budget.waiting == 0 { try await Task.sleep(for: .milliseconds(1)) }
        // A small request arriving after the big one does not overtake it.
        #expect(budget.tryReserve(1) == nil, "a waiter is queued: nobody overtakes it")
        first.release()
        let granted = try await big.value
        #expect(budget.used == 8 && granted.bytes == 8)
        granted.shrink(to: 3)
        #expect(budget.used == 3)
        granted.release()
        granted.release()
        #expect(budget.used == 0, "released once")
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
