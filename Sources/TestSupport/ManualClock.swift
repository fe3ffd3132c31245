import Synchronization
import TransferEngine

/// An `EngineClock` that moves only when a test says so: sleepers wake when `advance` passes
/// their deadline, so ticks, backoffs, pacing and timeouts are exact and instant.
public final class ManualClock: EngineClock {
    private struct Sleeper {
        let id: Int
        let deadline: Int
        let continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now: Int
        var nextID = 0
        var sleepers: [Sleeper] = []
        var cancelled: Set<Int> = []
    }
    private let state: Mutex<State>

    public init(start: Int = 1_000_000) {
        state = Mutex(State(now: start))
    }

    public func now() -> Int { state.withLock { $0.now } }

    /// The deadlines sleepers wait for now (what a test sees at rest).
    public var deadlines: [Int] { state.withLock { $0.sleepers.map(\.deadline) } }

    public func sleep(until deadline: Int) async throws {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { s in
                    if s.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= s.now { return .success(()) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { s in
                if let index = s.sleepers.firstIndex(where: { $0.id == id }) { return s.sleepers.remove(at: index) }
                s.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on and wakes every sleeper now due.
    public func advance(by milliseconds: Int) {
        let due: [Sleeper] = state.withLock { s in
            s.now += milliseconds
            let due = s.sleepers.filter { $0.deadline <= s.now }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}

/// Runs `body` while advancing `clock` in `step`s until it returns (at most `limit` steps of
/// simulated time). Real time only lets the tasks run between steps.
public func driving<T: Sendable>(
    _ clock: ManualClock, step: Int = 50, limit: Int = 20_000,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let finished = Atomic<Bool>(false)
    let task = Task {
        defer { finished.store(true, ordering: .releasing) }
        return try await body()
    }
    var steps = 0
    while !finished.load(ordering: .acquiring) {
        steps += 1
        if steps > limit { task.cancel(); break }
        await Task.yield()
        try await Task.sleep(for: .microseconds(200))
        clock.advance(by: step)
    }
    return try await task.value
}
