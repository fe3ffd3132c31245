/// The part loop of a job whose parts are planned: at most `concurrency` parts in flight, each
/// recorded before the object is completed, failed ones retried after a backoff, `bandwidthLimit`
/// pacing part starts and ends. Parts that end close together are recorded together, one
/// transaction every `partSaveMilliseconds` at most (their rows and one update of the job's counters),
/// so PostgreSQL writes fewer than two rows a part; a part not yet recorded when its worker dies
/// is only sent again. A requested yield stops new parts and hands the job back once those in
/// flight are recorded.
extension JobRunner {
    enum PartEvent: Sendable {
        case moved(part: Int, size: Int64, etag: String, checksum: String?)
        case failed(part: Int, error: TransferError)
        /// Gave up its wait for room: the job is giving its slot back.
        case abandoned(part: Int)
        case wake
    }

    typealias PartTasks = ThrowingTaskGroup<PartEvent, any Error>
    /// The multipart upload parts go to, and how its parts are checked.
    typealias Target = (id: String?, checksum: PartChecksum)

    /// The loop's state for one run.
    struct PartLoop {
        var scheduler: PartScheduler
        var recorded: [Int: RecordedPart]
        /// bandwidthLimit paces parts: part n may start once the bytes of the parts started
        /// before it in this run would have moved at the limit, and counts once its own would have.
        let pace: Pace?
        var bytesScheduled: Int64 = 0
        var wakeAt: Int?
        var yielding = false
        /// Parts moved but not yet in the store, and when the store was last written.
        var unsaved: [RecordedPart] = []
        var savedAt = Int.min / 2
    }

    func moveParts(
        _ job: Job, _ options: JobOptions, _ lease: Lease, _ work: Work, _ upload: MultipartUploadHandle,
        _ done: [Int: RecordedPart], _ control: JobControl
    ) async throws -> Outcome {
        let concurrency = min(max(options.concurrency ?? settings.concurrency, 1), settings.maxConcurrency)
        var loop = PartLoop(
            scheduler: PartScheduler(
                partCount: work.plan.partCount, concurrency: concurrency,
                retryLimit: options.retryLimit ?? settings.retryLimit,
                backoff: settings.backoff, completed: Set(done.keys), random: settings.random),
            recorded: done, pace: Pace(bytesPerSecond: options.bandwidthLimit, clock: clock))
        let uploadID = upload.id, checksum = upload.checksum
        let ending = try await withThrowingTaskGroup(of: PartEvent.self) { group in
            try await runParts(&group, &loop, job, lease, work, (uploadID, checksum), control)
        }
        try Task.checkCancellation()
        switch ending {
        case nil:
            // Handed back between parts: any instance takes it again, the fairest claim first.
            try await store.release(lease)
            return .stopped(.queued)
        case .fail(_, let failure)?:
            // The parts S3 holds are recorded first: a job that waits and runs again sends only the rest.
            try await save(&loop, lease)
            return try await giveUp(lease, job, failure, upload: upload)
        case .finish?, .start?:
            try await save(&loop, lease)
            try await control.completion.begin(store, lease)
            let etag: String
            let parts = loop.recorded.values.sorted { $0.number < $1.number }
            do {
                etag = try await complete(work, uploadID: uploadID, parts: parts, condition: options.writeCondition)
            } catch let failure as Failure {
                return try await giveUp(lease, job, failure.failure, upload: upload)
            } catch let error as TransferError {
                return try await giveUp(lease, job, JobFailure(error), upload: upload)
            }
            try Task.checkCancellation()
            cleanUp(job, after: .completed)
            let checksum = try await objectChecksum(job, work, parts: parts, etag: etag)
            try await store.finish(lease, state: .completed, etag: etag, error: nil, checksum: checksum)
            observer.jobEnded(kind: job.kind, state: .completed)
            return .completed(etag: etag)
        }
    }

    /// Runs parts until every one is done, one failed for good, or the job yields (nil).
    private func runParts(
        _ group: inout PartTasks, _ loop: inout PartLoop, _ job: Job, _ lease: Lease, _ work: Work,
        _ upload: Target, _ control: JobControl
    ) async throws -> PartScheduler.Action? {
        var terminal = launch(&group, &loop, work, upload)
        while terminal == nil, let event = try await group.next() {
            switch event {
            case .moved(let part, let size, let etag, let checksum):
                let record = RecordedPart(number: part, size: size, etag: etag, checksum: checksum)
                observer.partMoved(kind: job.kind, bytes: size)
                control.meter.touch()
                loop.recorded[part] = record
                loop.unsaved.append(record)
                loop.scheduler.partSucceeded(part)
                if loop.scheduler.partsInFlight == 0 || clock.now() - loop.savedAt >= settings.partSaveMilliseconds {
                    try await save(&loop, lease)
                }
            case .failed(let part, let error):
                observer.partFailed(kind: job.kind, code: error.code)
                terminal = loop.scheduler.partFailed(part, error: error, now: clock.now())
            case .abandoned(let part):
                loop.scheduler.partAbandoned(part)
            case .wake:
                loop.wakeAt = nil
                if clock.now() - loop.savedAt >= settings.partSaveMilliseconds { try await save(&loop, lease) }
            }
            if terminal == nil && !loop.yielding && (control.isYielding || (control.yieldRequested && control.yieldNow())) {
                loop.yielding = true
                loop.scheduler.pause()
            }
            if loop.yielding && loop.scheduler.partsInFlight == 0 {
                group.cancelAll()
                try await save(&loop, lease)
                return nil
            }
            if terminal == nil {
                terminal = launch(&group, &loop, work, upload)
                armWake(&group, &loop)
            }
        }
        group.cancelAll()
        return terminal
    }

    /// Starts what the scheduler says; returns its verdict when it is the end.
    private func launch(_ group: inout PartTasks, _ loop: inout PartLoop, _ work: Work, _ upload: Target) -> PartScheduler.Action? {
        for action in loop.scheduler.nextActions(now: clock.now()) {
            guard case .start(let part, let attempt) = action else { return action }
            let size = work.plan.size(ofPart: part)
            // Paced: a part starts once the bytes before it would have moved at the limit, and
            // counts once its own would have, so the job as a whole keeps to the rate.
            let notBefore = loop.pace?.time(forBytes: loop.bytesScheduled)
            if attempt == 1 { loop.bytesScheduled += size }
            let doneNotBefore = loop.pace?.time(forBytes: loop.bytesScheduled)
            group.addTask { try await self.move(part, size: size, work, upload, notBefore: notBefore, doneNotBefore: doneNotBefore) }
        }
        return nil
    }

    /// One part, its buffers reserved from the memory budget first; its failure as an event.
    private func move(
        _ part: Int, size: Int64, _ work: Work, _ upload: Target, notBefore: Int?,
        doneNotBefore: Int?
    ) async throws -> PartEvent {
        do {
            if let notBefore { try await clock.sleep(until: notBefore) }
            let moved = try await settings.transferring(for: work.owner) {
                try await work.move(part, work.plan.range(ofPart: part), upload.id, upload.checksum)
            }
            if let doneNotBefore { try await clock.sleep(until: doneNotBefore) }
            return .moved(part: part, size: size, etag: moved.etag, checksum: moved.checksum)
        } catch let error as TransferError {
            try Task.checkCancellation()
            return .failed(part: part, error: error)
        } catch is CancellationError {
            throw CancellationError()
        } catch is YieldedWhileWaiting {
            return .abandoned(part: part)
        } catch is ByteBudget.TooLarge {
            return .failed(part: part, error: TransferError(code: .spoolTooSmall, retryable: false))
        } catch {
            try Task.checkCancellation()
            return .failed(part: part, error: TransferError(code: .internalError, retryable: true))
        }
    }

    /// Records the parts moved since the last write, in one transaction.
    private func save(_ loop: inout PartLoop, _ lease: Lease) async throws {
        loop.savedAt = clock.now()
        guard !loop.unsaved.isEmpty else { return }
        try await store.recordParts(loop.unsaved, under: lease)
        loop.unsaved = []
    }

    /// A timer for the earliest retry due, unless one already wakes the loop sooner.
    private func armWake(_ group: inout PartTasks, _ loop: inout PartLoop) {
        guard let next = loop.scheduler.nextWakeup, loop.wakeAt.map({ next < $0 }) ?? true else { return }
        loop.wakeAt = next
        let clock = self.clock
        group.addTask {
            try await clock.sleep(until: next)
            return .wake
        }
    }
}
