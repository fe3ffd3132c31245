import Synchronization

/// A number of bytes shared by everything that holds buffers or files of one kind (the memory
/// of transfer buffers, the disk of the spool): each holder reserves what it will use before it
/// uses it and gives it back after, so the total never passes `capacity`. A reservation that
/// does not fit waits, first come first served, until enough is given back: a job whose next
/// part does not fit waits for room instead of growing the process.
public final class ByteBudget: Sendable {
    /// A reservation larger than the whole budget: it could never be granted.
    public struct TooLarge: Error, Equatable, Sendable {
        public let bytes: Int64
        public let capacity: Int64
    }

    private struct Waiter {
        let id: Int
        let bytes: Int64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var used: Int64 = 0
        var nextID = 0
        var waiters: [Waiter] = []
    }

    public let capacity: Int64
    private let state = Mutex(State())

    public init(capacity: Int64) {
        self.capacity = max(0, capacity)
    }

    /// Bytes held now.
    public var used: Int64 { state.withLock { $0.used } }

    /// Reservations waiting for room now.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Holds `bytes` (0 or more), waiting while they do not fit. Throws `TooLarge` at once for
    /// more than the capacity, and `CancellationError` when the waiting task is cancelled.
    public func reserve(_ bytes: Int64) async throws -> Reservation {
        let bytes = max(0, bytes)
        guard bytes <= capacity else { throw TooLarge(bytes: bytes, capacity: capacity) }
        if let granted = tryReserve(bytes) { return granted }
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now: Result<Void, any Error>? = state.withLock { s in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    // First come, first served: nobody overtakes a waiter, or a large part could wait for ever.
                    if s.waiters.isEmpty && s.used + bytes <= capacity {
                        s.used += bytes
                        return .success(())
                    }
                    s.waiters.append(Waiter(id: id, bytes: bytes, continuation: continuation))
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let (cancelled, granted) = state.withLock { s -> (Waiter?, [Waiter]) in
                guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return (nil, []) }
                let waiter = s.waiters.remove(at: index)
                return (waiter, Self.grant(&s, capacity: capacity))
            }
            cancelled?.continuation.resume(throwing: CancellationError())
            for waiter in granted { waiter.continuation.resume() }
        }
        return Reservation(budget: self, bytes: bytes)
    }

    /// `reserve`, waiting at most `milliseconds`: nil when there is no room by then (a request
    /// that cannot wait longer answers 503 instead).
    public func reserve(_ bytes: Int64, waitingAtMost milliseconds: Int) async throws -> Reservation? {
        if let granted = tryReserve(bytes) { return granted }
        return try await withThrowingTaskGroup(of: Reservation?.self) { group in
            group.addTask { try await self.reserve(bytes) }
            group.addTask {
                try await Task.sleep(for: .milliseconds(milliseconds))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// Holds `bytes` now if they fit and nobody waits, else nil.
    public func tryReserve(_ bytes: Int64) -> Reservation? {
        let bytes = max(0, bytes)
        let granted = state.withLock { s -> Bool in
            guard s.waiters.isEmpty, s.used + bytes <= capacity else { return false }
            s.used += bytes
            return true
        }
        return granted ? Reservation(budget: self, bytes: bytes) : nil
    }

    /// Counts `bytes` as held without asking (files found on disk at start-up): the budget may
    /// be over its capacity until they go.
    public func claimWithoutWaiting(_ bytes: Int64) -> Reservation {
        state.withLock { $0.used += max(0, bytes) }
        return Reservation(budget: self, bytes: max(0, bytes))
    }

    fileprivate func giveBack(_ bytes: Int64) {
        guard bytes > 0 else { return }
        let granted = state.withLock { s -> [Waiter] in
            s.used -= bytes
            return Self.grant(&s, capacity: capacity)
        }
        for waiter in granted { waiter.continuation.resume() }
    }

    /// Grants waiting reservations in order while the first one fits.
    private static func grant(_ s: inout State, capacity: Int64) -> [Waiter] {
        var granted: [Waiter] = []
        while let first = s.waiters.first, s.used + first.bytes <= capacity {
            s.waiters.removeFirst()
            s.used += first.bytes
            granted.append(first)
        }
        return granted
    }
}

/// Bytes held in a `ByteBudget`, given back by `release()` or when the last reference goes.
public final class Reservation: Sendable {
    private let budget: ByteBudget
    private let held: Atomic<Int64>

    init(budget: ByteBudget, bytes: Int64) {
        self.budget = budget
        self.held = Atomic(bytes)
    }

    /// Bytes held now.
    public var bytes: Int64 { held.load(ordering: .acquiring) }

    /// Gives the bytes back (once; later calls do nothing).
    public func release() {
        budget.giveBack(held.exchange(0, ordering: .acquiringAndReleasing))
    }

    /// Gives back what is held beyond `bytes` (a file that came out smaller than planned).
    public func shrink(to bytes: Int64) {
        let target = max(0, bytes)
        var current = held.load(ordering: .acquiring)
        while current > target {
            let (exchanged, original) = held.compareExchange(expected: current, desired: target, ordering: .acquiringAndReleasing)
            if exchanged {
                budget.giveBack(original - target)
                return
            }
            current = original
        }
    }

    deinit { budget.giveBack(held.load(ordering: .acquiring)) }
}
