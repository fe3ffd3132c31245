import Synchronization

/// Signals from the instance that runs a job to the job: a request to give its slot back at
/// its next part boundary (or at once, while it only waits for room), so that another
/// identity's waiting job can run; withdrawn once a slot is free.
public final class JobControl: Sendable {
    private struct State {
        var requested = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func requestYield() {
        let woken = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.requested = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    public func withdrawYield() { state.withLock { $0.requested = false } }

    public var yieldRequested: Bool { state.withLock { $0.requested } }

    /// Returns once a yield is requested, or the task is cancelled.
    func untilYieldRequested() async {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.requested || Task.isCancelled { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// The job gave its slot back while it waited for room: it goes back to the queue.
struct YieldedWhileWaiting: Error {}

extension JobControl {
    /// Runs `reserve` (a wait for spool or memory room), unless a yield is requested first:
    /// then throws `YieldedWhileWaiting` and the wait is given up.
    func waitingForRoom<T: Sendable>(_ reserve: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await reserve() }
            group.addTask {
                await self.untilYieldRequested()
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let granted = first else {
                try Task.checkCancellation()
                throw YieldedWhileWaiting()
            }
            return granted
        }
    }
}
