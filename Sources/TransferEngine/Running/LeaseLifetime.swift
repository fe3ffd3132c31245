/// Work done under a lease: a timer renews the lease while the work runs, and stops the work at
/// once when the lease is lost (pause, cancel, another instance), a deadline passes, or no
/// byte has moved for `stallMilliseconds`. A renewal
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
        /// No byte moved for `stallMilliseconds`: the work was stopped.
        case stalled
    }

    let store: any JobStore
    let clock: any EngineClock
    let tickMilliseconds: Int
    let leaseMilliseconds: Int64
    /// Word of the job's changes: when given, renewals come every third of the lease and a
    /// change (pause, cancel) is looked at as it is announced; without it, the job is looked at
    /// through a renewal every tick.
    var signals: (any JobSignals)? = nil
    /// The work's live byte count: when given, it is carried on a renewal at least once a
    /// second while it moves (and no write is made while it stands still between renewals).
    var progress: ProgressMeter? = nil
    /// Once marked, the deadline no longer stops the work: it is writing its object.
    var completion: CompletionMark? = nil
    /// With `progress`: the work is stopped (`stalled`) once `progress` showed no movement for
    /// this long (not while the object is being written). Nil: no stall limit.
    var stallMilliseconds: Int? = nil

    /// Whether the job's change was announced before `within` milliseconds passed.
    private static func announced(
        _ signals: any JobSignals, _ id: String, clock: any EngineClock,
        within milliseconds: Int
    ) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                await signals.changed(id)
                return !Task.isCancelled
            }
            group.addTask {
                try await clock.sleep(milliseconds: milliseconds)
                return false
            }
            defer { group.cancelAll() }
            let announced = try await group.next() ?? false
            // Cancelled, the wait for word ends at once and says nothing was announced: the
            // loop must end too, not renew again.
            try Task.checkCancellation()
            return announced
        }
    }

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
            let signals = self.signals, progress = self.progress, completion = self.completion
            let stall = progress == nil ? nil : stallMilliseconds
            let every = signals == nil ? tick : max(tick, Int(leaseMilliseconds / 3))
            let look = progress == nil ? every : min(every, ProgressMeter.intervalMilliseconds)
            group.addTask {
                var current = lease
                var renewAt = clock.now() + every
                var written = progress?.value
                var moves = progress?.moves ?? 0, movedAt = clock.now()
                while true {
                    try Task.checkCancellation()
                    let wait = min(renewAt, clock.now() + look) - clock.now()
                    if wait > 0 {
                        if let signals {
                            if try await Self.announced(signals, lease.jobID, clock: clock, within: wait) {
                                // Announced: a look at the job, no write. Anything but running is the end.
                                if let job = try? await store.job(id: lease.jobID), job.state != .running { return .leaseLost }
                                continue
                            }
                        } else {
                            try await clock.sleep(milliseconds: wait)
                        }
                    }
                    if let deadline, clock.now() >= deadline, completion?.isMarked != true { return .timedOut }
                    if let stall, let progress {
                        if progress.moves != moves || progress.waitingForRoom {
                            moves = progress.moves
                            movedAt = clock.now()
                        } else if clock.now() - movedAt >= stall, completion?.isMarked != true {
                            return .stalled
                        }
                    }
                    let moved = progress.map(\.value).flatMap { $0 != written ? $0 : nil }
                    // Neither a renewal due nor progress to carry: look again in a second.
                    if moved == nil && clock.now() < renewAt { continue }
                    do {
                        current = try await store.renew(current, leaseMilliseconds: leaseMilliseconds, flowing: moved)
                        if let moved { written = moved }
                    } catch is LeaseLost {
                        return .leaseLost
                    } catch {
                        if Int64(clock.now()) + Int64(every) >= current.expiresAt { throw error }
                    }
                    renewAt = clock.now() + every
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
            for case .success(let ending) in results { if case .stalled = ending { return ending } }
            for case .success(let ending) in results { if case .leaseLost = ending { return ending } }
            for case .failure(let error) in results where !(error is CancellationError) { throw error }
            throw CancellationError()
        }
    }
}
