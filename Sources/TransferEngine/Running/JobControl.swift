import Synchronization

/// One slot wanted back by the instance: asked of every job of the identity holding the most
/// slots, taken by the first of them to reach a point where it can stop, so only one yields.
public final class SlotRequest: Sendable {
    private let taken = Atomic<Bool>(false)

    public init() {}

    /// True for the one job that takes it.
    func take() -> Bool { taken.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }

    var isTaken: Bool { taken.load(ordering: .acquiring) }
}

/// Signals from the instance that runs a job to the job: a request to give its slot back at
/// its next part boundary (or at once, while it only waits for room), so that another
/// identity's waiting job can run; withdrawn once a slot is free.
public final class JobControl: Sendable {
    private struct State {
        var request: SlotRequest?
        var yielding = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())
    /// The run's live byte count (a streamed import's bytes read), carried on lease renewals.
    public let meter = ProgressMeter()
    /// Set once the job has begun to write its object.
    let completion = CompletionMark()

    public init() {}

    /// Asks the job for its slot; `request` may be asked of other jobs too.
    public func requestYield(_ request: SlotRequest = SlotRequest()) {
        let woken = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.request = request
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// The slot is not needed any more (unless this job took the request already).
    public func withdrawYield() { state.withLock { $0.request = nil } }

    /// Whether the job is asked for its slot and nobody has given one for that request yet.
    public var yieldRequested: Bool { state.withLock { s in s.request.map { !$0.isTaken } ?? false } }

    /// Whether this job took a request and is giving its slot back.
    public var isYielding: Bool { state.withLock { $0.yielding } }

    /// Takes the request for this job: true when it is the one to give its slot back.
    func yieldNow() -> Bool {
        state.withLock { s in
            guard !s.yielding else { return true }
            guard let request = s.request, request.take() else { return false }
            s.yielding = true
            return true
        }
    }

    /// Returns once a yield is requested (and not yet given by another job), or the task is
    /// cancelled.
    func untilYieldRequested() async {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.yielding || s.request.map({ !$0.isTaken }) == true || Task.isCancelled { return true }
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
    /// Runs `reserve` (a wait for spool or memory room), unless this job is the one to give its
    /// slot back first: then throws `YieldedWhileWaiting` and the wait is given up.
    /// The time it waits does not count towards the stall limit (`ProgressMeter.waitingForRoom`).
    func waitingForRoom<T: Sendable>(_ reserve: @escaping @Sendable () async throws -> T) async throws -> T {
        try await meter.waiting { try await yieldingWhileWaiting(reserve) }
    }

    private func yieldingWhileWaiting<T: Sendable>(_ reserve: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await reserve() }
            group.addTask {
                // Another job may give the slot first: then wait for the next request.
                while !Task.isCancelled {
                    await self.untilYieldRequested()
                    if !Task.isCancelled && self.yieldNow() { return nil }
                }
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
