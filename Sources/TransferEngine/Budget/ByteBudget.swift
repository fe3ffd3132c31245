import Synchronization

/// A number of bytes shared by everything that holds buffers or files of one kind (the memory
/// of transfer buffers, the disk of the spool): each holder reserves what it will use before it
/// uses it and gives it back after, so the total never passes `capacity`. A reservation names
/// the identity it is for, and no identity holds more than `ownerShare` (`GATEWAY_USER_*_SHARE`),
/// so one account's stalled transfers cannot pin what everyone else needs.
///
/// A reservation that does not fit waits. Waiters are looked at oldest first each time bytes
/// come back, and every one that fits is granted: one that does not fit (a large one, or one of
/// an identity at its share) never holds up smaller ones behind it, and it still gets its turn,
/// since freed bytes go to the waiters, oldest first, before any newcomer.
public final class ByteBudget: Sendable {
    /// A reservation larger than the whole budget, or than one identity's share: it could never
    /// be granted.
    public struct TooLarge: Error, Equatable, Sendable {
        public let bytes: Int64
        public let capacity: Int64
    }

    private struct Waiter {
        let id: Int
        let bytes: Int64
        let owner: String?
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var used: Int64 = 0
        var byOwner: [String: Int64] = [:]
        var nextID = 0
        var waiters: [Waiter] = []

        func fits(_ bytes: Int64, _ owner: String?, capacity: Int64, share: Int64) -> Bool {
            guard used + bytes <= capacity else { return false }
            guard let owner else { return true }
            return byOwner[owner, default: 0] + bytes <= share
        }

        mutating func take(_ bytes: Int64, _ owner: String?) {
            used += bytes
            if let owner { byOwner[owner, default: 0] += bytes }
        }

        mutating func giveBack(_ bytes: Int64, _ owner: String?) {
            used -= bytes
            guard let owner, let held = byOwner[owner] else { return }
            if held <= bytes { byOwner.removeValue(forKey: owner) } else { byOwner[owner] = held - bytes }
        }
    }

    public let capacity: Int64
    /// The most one identity may hold at once.
    public let ownerShare: Int64
    private let state = Mutex(State())

    /// `ownerShare` nil: an identity may hold the whole budget.
    public init(capacity: Int64, ownerShare: Int64? = nil) {
        self.capacity = max(0, capacity)
        self.ownerShare = min(self.capacity, max(0, ownerShare ?? self.capacity))
    }

    /// Bytes held now.
    public var used: Int64 { state.withLock { $0.used } }

    /// Bytes `owner` holds now.
    public func held(by owner: String) -> Int64 { state.withLock { $0.byOwner[owner, default: 0] } }

    /// Reservations waiting for room now.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Holds `bytes` (0 or more) for `owner`, waiting while they do not fit. Throws `TooLarge` at
    /// once for more than the capacity (or the owner's share), and `CancellationError` when the
    /// waiting task is cancelled.
    public func reserve(_ bytes: Int64, owner: String? = nil) async throws -> Reservation {
        let bytes = max(0, bytes)
        guard bytes <= (owner == nil ? capacity : ownerShare) else {
            throw TooLarge(bytes: bytes, capacity: owner == nil ? capacity : ownerShare)
        }
        if let granted = tryReserve(bytes, owner: owner) { return granted }
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        let capacity = self.capacity, share = self.ownerShare
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now: Result<Void, any Error>? = state.withLock { s in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if s.fits(bytes, owner, capacity: capacity, share: share) {
                        s.take(bytes, owner)
                        return .success(())
                    }
                    s.waiters.append(Waiter(id: id, bytes: bytes, owner: owner, continuation: continuation))
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let cancelled = state.withLock { s -> Waiter? in
                guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
        return Reservation(budget: self, bytes: bytes, owner: owner)
    }

    /// `reserve`, waiting at most `milliseconds`: nil when there is no room by then (a request
    /// that cannot wait longer answers 503 instead).
    public func reserve(_ bytes: Int64, owner: String? = nil, waitingAtMost milliseconds: Int) async throws -> Reservation? {
        if let granted = tryReserve(bytes, owner: owner) { return granted }
        return try await withThrowingTaskGroup(of: Reservation?.self) { group in
            group.addTask { try await self.reserve(bytes, owner: owner) }
            group.addTask {
                try await Task.sleep(for: .milliseconds(milliseconds))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// Holds `bytes` for `owner` now if they fit, else nil.
    public func tryReserve(_ bytes: Int64, owner: String? = nil) -> Reservation? {
        let bytes = max(0, bytes)
        let capacity = self.capacity, share = self.ownerShare
        let granted = state.withLock { s -> Bool in
            guard s.fits(bytes, owner, capacity: capacity, share: share) else { return false }
            s.take(bytes, owner)
            return true
        }
        return granted ? Reservation(budget: self, bytes: bytes, owner: owner) : nil
    }

    /// Counts `bytes` as held without asking (files found on disk at start-up): the budget may
    /// be over its capacity until they go.
    public func claimWithoutWaiting(_ bytes: Int64) -> Reservation {
        state.withLock { $0.take(max(0, bytes), nil) }
        return Reservation(budget: self, bytes: max(0, bytes), owner: nil)
    }

    fileprivate func giveBack(_ bytes: Int64, owner: String?) {
        guard bytes > 0 else { return }
        let capacity = self.capacity, share = self.ownerShare
        let granted = state.withLock { s -> [Waiter] in
            s.giveBack(bytes, owner)
            // Oldest first; any that fits is granted, the rest keep their places.
            var granted: [Waiter] = [], waiting: [Waiter] = []
            for waiter in s.waiters {
                if s.fits(waiter.bytes, waiter.owner, capacity: capacity, share: share) {
                    s.take(waiter.bytes, waiter.owner)
                    granted.append(waiter)
                } else {
                    waiting.append(waiter)
                }
            }
            if !granted.isEmpty { s.waiters = waiting }
            return granted
        }
        for waiter in granted { waiter.continuation.resume() }
    }
}

/// Bytes held in a `ByteBudget` for one identity (or none), given back by `release()` or when
/// the last reference goes.
public final class Reservation: Sendable {
    private let budget: ByteBudget
    private let owner: String?
    private let held: Atomic<Int64>

    init(budget: ByteBudget, bytes: Int64, owner: String?) {
        self.budget = budget
        self.owner = owner
        self.held = Atomic(bytes)
    }

    /// Bytes held now.
    public var bytes: Int64 { held.load(ordering: .acquiring) }

    /// Gives the bytes back (once; later calls do nothing).
    public func release() {
        budget.giveBack(held.exchange(0, ordering: .acquiringAndReleasing), owner: owner)
    }

    /// Gives back what is held beyond `bytes` (a file that came out smaller than planned).
    public func shrink(to bytes: Int64) {
        let target = max(0, bytes)
        var current = held.load(ordering: .acquiring)
        while current > target {
            let (exchanged, original) = held.compareExchange(expected: current, desired: target, ordering: .acquiringAndReleasing)
            if exchanged {
                budget.giveBack(original - target, owner: owner)
                return
            }
            current = original
        }
    }

    deinit { budget.giveBack(held.load(ordering: .acquiring), owner: owner) }
}
