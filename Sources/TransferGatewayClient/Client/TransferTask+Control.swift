import Foundation

extension TransferTask {
    /// Starts a task that is waiting, paused, or failed in a way that may pass (retries
    /// exhausted, token refused); it goes on from what the server and the state directory hold.
    public func resume() {
        let started: Bool = inner.withLock { inner in
            guard inner.state == .waiting || inner.state == .paused || inner.state == .failed else { return false }
            inner.state = .running
            inner.final = nil
            inner.generation += 1
            let generation = inner.generation
            let previous = inner.run
            inner.run = Task { [self] in
                await previous?.value
                await execute(generation)
            }
            return true
        }
        if started { emit(.resumed) }
    }

    /// Stops moving bytes at once (requests in flight are cancelled; S3 and the gateway keep what
    /// they had). `resume()` goes on, in this process or after a relaunch.
    public func pause() {
        let run: Task<Void, Never>?? = inner.withLock { inner in
            guard inner.state == .running else { return .none }
            inner.state = .paused
            inner.generation += 1
            inner.run?.cancel()
            return .some(inner.run)
        }
        guard let run else { return }
        emit(.paused)
        let runner = self.runner
        let id = self.id
        // Recorded at once (a process may exit right after pausing) and again once the run has
        // stopped, after any write of its own.
        Self.markPaused(id, runner: runner)
        inner.withLock { inner in
            inner.run = Task {
                await run?.value
                Self.markPaused(id, runner: runner)
            }
        }
    }

    private static func markPaused(_ id: String, runner: TransferRunner) {
        guard var record = try? runner.context.store.load(id) else { return }
        record.state = .paused
        try? runner.context.store.save(record)
    }

    /// Stops the task for good: the upload job is cancelled or the client upload aborted, a
    /// download's partial file removed, and the record forgotten. Ends with `failed(.canceled)`.
    public func cancel() {
        let run: Task<Void, Never>?? = inner.withLock { inner in
            guard !inner.state.isFinished else { return .none }
            inner.state = .canceled
            inner.generation += 1
            inner.run?.cancel()
            return .some(inner.run)
        }
        guard let run else { return }
        let runner = self.runner
        let id = self.id
        Task {
            await run?.value
            if let record = try? runner.context.store.load(id) {
                await runner.abandon(record)
                runner.forget(record)
            }
            finish(.failed(.canceledByUser), state: .canceled)
        }
    }

    /// Stops the run as a killed process would: no record is written (tests of crash recovery).
    func abandonRun() async {
        let run: Task<Void, Never>? = inner.withLock { inner in
            inner.state = .waiting
            inner.generation += 1
            inner.run?.cancel()
            return inner.run
        }
        await run?.value
    }

    private func execute(_ generation: Int) async {
        let store = runner.context.store
        var record: TransferRecord
        do {
            record = try store.load(id)
            record.state = .running
            record.lastError = nil
            try store.save(record)
        } catch {
            finish(.failed(error as? TransferError ?? TransferError(.fileError, "\(error)")), state: .failed)
            return
        }
        do {
            let result = try await runner.run(&record, reporter: reporter)
            guard isCurrent(generation) else { return }
            reporter.flush()
            runner.forget(record)
            finish(.completed(result), state: .completed)
        } catch {
            guard isCurrent(generation) else { return }
            let failure = error as? TransferError ?? TransferError(.badResponse, "\(error)")
            if failure.code == .retriesExhausted || failure.code == .unauthorized {
                // Waiting may get past it: keep the record, so resume() (or a relaunch) goes on.
                record.state = .failed
                record.lastError = failure
                try? store.save(record)
            } else {
                await runner.abandon(record)
                runner.forget(record)
            }
            finish(.failed(failure), state: .failed)
        }
    }

    private func isCurrent(_ generation: Int) -> Bool {
        inner.withLock { $0.generation == generation && $0.state == .running }
    }

    private func finish(_ event: TransferEvent, state: TransferState) {
        let subscribers = inner.withLock { inner in
            inner.state = state
            inner.final = event
            defer { inner.subscribers = [:] }
            return Array(inner.subscribers.values)
        }
        for subscriber in subscribers {
            subscriber.yield(event)
            subscriber.finish()
        }
        ended(id)
    }
}
