/// Work done under a lease: a timer renews the lease while the work runs, and stops the work at
/// once when the lease is lost (pause, cancel, another instance) or a deadline passes. A renewal
/// that fails for another reason (the database is away) is tried again until the lease would
/// have lapsed anyway. Upload requests and server-side jobs share it, so every phase of either
/// is under the same rule.
struct LeaseLifetime<Value: Sendable>: Sendable {
    enum Ending: Sendable {
        /// The work ran to a value of its own.
        case finished(Value)
        /// The lease was lost: the work was stopped.
        case leaseLost
        /// The deadline passed: the work was stopped.
        case timedOut
    }

    let store: any JobStore
    let clock: any EngineClock
    let tickMilliseconds: Int
    let leaseMilliseconds: Int64

    func run(_ lease: Lease, deadline: Int?, _ body: @escaping @Sendable () async throws -> Value) async throws -> Ending {
        let store = self.store, clock = self.clock, tick = tickMilliseconds, leaseMilliseconds = self.leaseMilliseconds
        return try await withThrowingTaskGroup(of: Ending.self) { group in
            group.addTask {
                do {
                    return .finished(try await body())
                } catch is LeaseLost {
                    return .leaseLost
                }
            }
            group.addTask {
                var current = lease
                while true {
                    try await clock.sleep(milliseconds: tick)
                    if let deadline, clock.now() >= deadline { return .timedOut }
                    do {
                        current = try await store.renew(current, leaseMilliseconds: leaseMilliseconds)
                    } catch is LeaseLost {
                        return .leaseLost
                    } catch {
                        if Int64(clock.now()) + Int64(tick) >= current.expiresAt { throw error }
                    }
                }
            }
            var results: [Result<Ending, any Error>] = []
            if let first = await group.nextResult() { results.append(first) }
            group.cancelAll()
            while let next = await group.nextResult() { results.append(next) }
            // The work's own ending wins (it may have finished as the timer fired); then the
            // timer's verdict; then the first real error.
            for case .success(let ending) in results { if case .finished = ending { return ending } }
            for case .success(let ending) in results { if case .timedOut = ending { return ending } }
            for case .success(let ending) in results { if case .leaseLost = ending { return ending } }
            for case .failure(let error) in results where !(error is CancellationError) { throw error }
            throw CancellationError()
        }
    }
}
