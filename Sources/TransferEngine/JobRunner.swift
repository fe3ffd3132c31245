/// Runs one server-side job (`copy`, `import`, `download`) from its lease to its end.
///
/// Every type is the same loop over a part plan: at most `concurrency` parts in flight, each
/// part recorded in the job store before it counts, retries with backoff for errors a retry
/// can help, pause and cancel seen through the lease, a running-time limit. What differs is
/// `Work`: where a part comes from and where it lands (a multipart upload, or the spool file
/// of a download). After a crash the next owner resumes from the recorded parts it can still
/// trust: ListParts for uploads, a re-hash of the spool for downloads.
public struct JobRunner: Sendable {
    public enum Outcome: Sendable, Equatable {
        case completed(etag: String)
        case failed(code: String)
        /// Paused or canceled by the owner; the lease was released (pause) or the upload aborted (cancel).
        case stopped(Job.State)
        /// Another instance owns the job now.
        case leaseLost
    }

    let store: any JobStore
    let objects: any ObjectStore
    let fetcher: (any SourceFetcher)?
    let spool: (any Spool)?
    let settings: EngineSettings
    let clock: any EngineClock
    let observer: any JobObserver

    public init(store: any JobStore, objects: any ObjectStore, fetcher: (any SourceFetcher)? = nil,
                spool: (any Spool)? = nil, settings: EngineSettings, clock: any EngineClock = SystemClock(),
                observer: any JobObserver = NoObserver()) {
        self.store = store
        self.objects = objects
        self.fetcher = fetcher
        self.spool = spool
        self.settings = settings
        self.clock = clock
        self.observer = observer
    }

    /// A job that cannot go on, with the code its `error` carries.
    struct Failure: Error {
        let code: String
    }

    /// Where a job's parts land.
    enum Destination: Sendable {
        case upload(key: String)
        case spool(SpoolFile)
    }

    /// A job's bytes and how each part moves, once its source is known.
    struct Work: Sendable {
        let plan: PartPlan
        let destination: Destination
        /// Moves part `part` (its byte `range`); returns what is recorded as its ETag.
        let move: @Sendable (_ part: Int, _ range: ClosedRange<Int64>?, _ uploadID: String?) async throws -> String
        /// A cheaper call for a one-part object (CopyObject, PutObject), where there is one.
        let single: (@Sendable () async throws -> String)?
        /// Whether a part recorded before a restart still holds, beyond what ListParts says.
        let stillHolds: (@Sendable (RecordedPart, ClosedRange<Int64>?) -> Bool)?
        /// The job's ETag when it lands in the spool (the source object's).
        let sourceETag: String?
    }

    private enum Event: Sendable {
        case moved(part: Int, size: Int64, etag: String)
        case failed(part: Int, error: TransferError)
        case tick
        case wake
    }

    public func run(_ job: Job, lease initialLease: Lease) async throws -> Outcome {
        var lease = initialLease
        let options = JobOptions.decode(job.options)
        let deadline = clock.now() + max(1, options.timeoutSeconds ?? settings.timeoutSeconds) * 1000
        let work: Work
        do {
            work = try await prepare(job, options)
        } catch let failure as Failure {
            return try await fail(lease, job, code: failure.code, uploadID: nil)
        }
        let plan = work.plan
        let retryLimit = options.retryLimit ?? settings.retryLimit

        if plan.isSinglePart, let single = work.single {
            do {
                try await store.start(lease, uploadID: nil, partsTotal: 1, partSize: plan.partSize, bytesTotal: plan.objectSize)
                let etag = try await clock.retrying(limit: retryLimit, backoff: settings.backoff, random: settings.random, single)
                observer.partMoved(kind: job.kind, bytes: plan.objectSize)
                try await store.recordPart(RecordedPart(number: 1, size: plan.objectSize, etag: etag), under: lease)
                cleanUp(job, after: .completed)
                try await store.finish(lease, state: .completed, etag: etag, error: nil)
                observer.jobEnded(kind: job.kind, state: .completed)
                return .completed(etag: etag)
            } catch is LeaseLost {
                return try await whyLeaseEnded(job, uploadID: nil)
            } catch let error as TransferError {
                return try await fail(lease, job, code: error.code, uploadID: nil)
            }
        }

        // Parts already done by a previous owner, trusted only where the destination holds them too.
        var uploadID: String?
        var recorded: [Int: RecordedPart] = [:]
        do {
            switch work.destination {
            case .upload(let key):
                var resumable = job.uploadID
                if let existing = resumable {
                    do {
                        // A part number sent twice is the later upload in S3's eyes, as in listParts.
                        let held = Dictionary(try await objects.listParts(key: key, uploadID: existing).map { ($0.number, $0) },
                                              uniquingKeysWith: { _, later in later })
                        uploadID = existing
                        for part in try await store.parts(of: job.id)
                        where held[part.number]?.etag == part.etag && part.size == plan.size(ofPart: part.number)
                            && work.stillHolds?(part, plan.range(ofPart: part.number)) ?? true {
                            recorded[part.number] = part
                        }
                    } catch let error as TransferError where error.code == "NoSuchUpload" {
                        // The previous owner died after completing the upload but before recording
                        // it: the object is done if it is exactly what the recorded parts make.
                        if let etag = try await completedBefore(job, key: key, plan: plan) {
                            try await store.finish(lease, state: .completed, etag: etag, error: nil)
                            observer.jobEnded(kind: job.kind, state: .completed)
                            return .completed(etag: etag)
                        }
                        resumable = nil
                    }
                }
                if resumable == nil {
                    // A previous owner may have died between creating an upload and recording
                    // its id: such an upload belongs to no one, so it is aborted, not leaked.
                    // Only one begun half a lease ago or more: a dead owner's is at least a lease
                    // old by now, while one that another writer of this key has just begun and
                    // not yet recorded is younger (the janitor sweeps whatever this leaves).
                    if job.attempts > 1 {
                        let inUse = try await store.uploadIDsInUse(key: key)
                        let orphanAge = Double(settings.leaseMilliseconds) / 2000
                        for orphan in try await objects.openUploads(key: key, olderThan: orphanAge) where !inUse.contains(orphan) {
                            try? await objects.abortMultipartUpload(key: key, uploadID: orphan)
                        }
                    }
                    let created = try await objects.createMultipartUpload(key: key, attributes: options.attributes)
                    uploadID = created
                    try await store.start(lease, uploadID: created, partsTotal: plan.partCount, partSize: plan.partSize,
                                          bytesTotal: plan.objectSize)
                }
            case .spool:
                if job.partsTotal == plan.partCount && job.partSize == plan.partSize {
                    for part in try await store.parts(of: job.id)
                    where part.size == plan.size(ofPart: part.number)
                        && work.stillHolds?(part, plan.range(ofPart: part.number)) ?? true {
                        recorded[part.number] = part
                    }
                } else {
                    try await store.start(lease, uploadID: nil, partsTotal: plan.partCount, partSize: plan.partSize,
                                          bytesTotal: plan.objectSize)
                }
            }
        } catch is LeaseLost {
            return try await whyLeaseEnded(job, uploadID: uploadID)
        } catch let error as TransferError {
            return try await fail(lease, job, code: error.code, uploadID: uploadID)
        }

        let concurrency = min(max(options.concurrency ?? settings.concurrency, 1), settings.maxConcurrency)
        var scheduler = PartScheduler(partCount: plan.partCount, concurrency: concurrency, retryLimit: retryLimit,
                                      backoff: settings.backoff, completed: Set(recorded.keys), random: settings.random)
        let clock = self.clock
        let tick = settings.tickMilliseconds
        let move = work.move
        let activeUpload = uploadID
        // bandwidthLimit paces part starts: part n may start once the bytes of the parts
        // started before it in this run would have moved at the limit.
        let pacingStart = clock.now()
        let bytesPerSecond = options.bandwidthLimit.map { max(1, $0) }
        var bytesScheduled: Int64 = 0
        var wakeAt: Int?
        var timedOut = false
        let outcome: Outcome = try await withThrowingTaskGroup(of: Event.self) { group in
            func launch(_ actions: [PartScheduler.Action]) -> PartScheduler.Action? {
                for action in actions {
                    switch action {
                    case .start(let part, let attempt):
                        let range = plan.range(ofPart: part)
                        let size = plan.size(ofPart: part)
                        let notBefore = bytesPerSecond.map { pacingStart + Int(bytesScheduled * 1000 / $0) }
                        if attempt == 1 { bytesScheduled += size }
                        group.addTask {
                            do {
                                if let notBefore { try await clock.sleep(until: notBefore) }
                                let etag = try await move(part, range, activeUpload)
                                return .moved(part: part, size: size, etag: etag)
                            } catch let error as TransferError {
                                return .failed(part: part, error: error)
                            } catch is CancellationError {
                                throw CancellationError()
                            } catch {
                                return .failed(part: part, error: TransferError(code: "InternalError", retryable: true))
                            }
                        }
                    case .finish, .fail:
                        return action
                    }
                }
                return nil
            }
            func armWake() {
                guard let next = scheduler.nextWakeup, wakeAt.map({ next < $0 }) ?? true else { return }
                wakeAt = next
                group.addTask {
                    try await clock.sleep(until: next)
                    return .wake
                }
            }
            group.addTask {
                try await clock.sleep(milliseconds: tick)
                return .tick
            }
            var terminal = launch(scheduler.nextActions(now: clock.now()))
            while terminal == nil, let event = try await group.next() {
                switch event {
                case .moved(let part, let size, let etag):
                    let record = RecordedPart(number: part, size: size, etag: etag)
                    do {
                        try await store.recordPart(record, under: lease)
                    } catch is LeaseLost {
                        group.cancelAll()
                        return try await whyLeaseEnded(job, uploadID: activeUpload)
                    }
                    observer.partMoved(kind: job.kind, bytes: size)
                    recorded[part] = record
                    scheduler.partSucceeded(part)
                case .failed(let part, let error):
                    observer.partFailed(kind: job.kind, code: error.code)
                    if let action = scheduler.partFailed(part, retryable: error.retryable, error: error.code, now: clock.now()) {
                        terminal = action
                    }
                case .wake:
                    wakeAt = nil
                case .tick:
                    if clock.now() >= deadline {
                        timedOut = true
                        terminal = .fail(part: 0, error: "JobTimeout")
                        break
                    }
                    do {
                        lease = try await store.renew(lease, leaseMilliseconds: settings.leaseMilliseconds)
                    } catch is LeaseLost {
                        group.cancelAll()
                        return try await whyLeaseEnded(job, uploadID: activeUpload)
                    }
                    group.addTask {
                        try await clock.sleep(milliseconds: tick)
                        return .tick
                    }
                }
                if terminal == nil {
                    terminal = launch(scheduler.nextActions(now: clock.now()))
                    armWake()
                }
            }
            group.cancelAll()
            if case .fail(_, let code)? = terminal { return .failed(code: timedOut ? "JobTimeout" : code) }
            do {
                return .completed(etag: try await complete(work, uploadID: activeUpload,
                                                           parts: recorded.values.sorted { $0.number < $1.number }))
            } catch let failure as Failure {
                return .failed(code: failure.code)
            } catch let error as TransferError {
                return .failed(code: error.code)
            }
        }
        switch outcome {
        case .completed(let etag):
            do {
                cleanUp(job, after: .completed)
                try await store.finish(lease, state: .completed, etag: etag, error: nil)
            } catch is LeaseLost {
                return .leaseLost
            }
            observer.jobEnded(kind: job.kind, state: .completed)
            return outcome
        case .failed(let code):
            return try await fail(lease, job, code: code, uploadID: activeUpload)
        case .stopped, .leaseLost:
            return outcome
        }
    }

    /// The ETag of `key` if it is already the object the job's recorded parts make (same size,
    /// and the multipart ETag of those parts), else nil.
    private func completedBefore(_ job: Job, key: String, plan: PartPlan) async throws -> String? {
        let parts = try await store.parts(of: job.id)
        guard parts.count == plan.partCount, let expected = MultipartETag.expected(for: parts.map(\.etag)),
              let current = try? await objects.size(of: key),
              current.size == plan.objectSize, MultipartETag.same(current.etag, expected) else { return nil }
        return current.etag
    }

    /// Finishes the object and checks it: size and, where S3's rule allows computing it, ETag.
    private func complete(_ work: Work, uploadID: String?, parts: [RecordedPart]) async throws -> String {
        switch work.destination {
        case .upload(let key):
            guard let uploadID else { throw Failure(code: "InternalError") }
            let etag = try await objects.completeMultipartUpload(key: key, uploadID: uploadID, parts: parts)
            if let expected = MultipartETag.expected(for: parts.map(\.etag)), !MultipartETag.same(expected, etag) {
                throw Failure(code: "ETagMismatch")
            }
            let check = try await objects.size(of: key)
            guard check.size == work.plan.objectSize else { throw Failure(code: "SizeMismatch") }
            return etag
        case .spool(let file):
            do { try file.sync() } catch { throw Failure(code: "SpoolFailed") }
            guard file.size == work.plan.objectSize else { throw Failure(code: "SizeMismatch") }
            return work.sourceETag ?? ""
        }
    }


    /// Paused, canceled, or taken over: the stored state says which. A canceled job's upload is
    /// aborted and its spool removed here, since this runner is the one that knows them.
    private func whyLeaseEnded(_ job: Job, uploadID: String?) async throws -> Outcome {
        switch try await store.job(id: job.id)?.state {
        case .canceled?:
            let objects = self.objects
            if let uploadID, let key = job.objectKey {
                await Task.detached { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }.value
            }
            cleanUp(job, after: .canceled)
            observer.jobEnded(kind: job.kind, state: .canceled)
            return .stopped(.canceled)
        case .paused?:
            return .stopped(.paused)
        default:
            return .leaseLost
        }
    }

    /// Ends the job as failed, aborting its multipart upload so nothing is left behind.
    private func fail(_ lease: Lease, _ job: Job, code: String, uploadID: String?) async throws -> Outcome {
        if let uploadID, let key = job.objectKey {
            let objects = self.objects
            await Task.detached { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }.value
        }
        cleanUp(job, after: .failed)
        do {
            try await store.finish(lease, state: .failed, etag: nil, error: Job.errorJSON(code: code))
        } catch is LeaseLost {
            return .leaseLost
        }
        observer.jobEnded(kind: job.kind, state: .failed)
        return .failed(code: code)
    }

    /// An import's spooled body goes once the job ends; a download's stays while it completed.
    private func cleanUp(_ job: Job, after state: Job.State) {
        guard let spool else { return }
        if job.kind == .import { spool.remove(jobID: job.id, name: .importBody) }
        if job.kind == .download && state != .completed { spool.remove(jobID: job.id, name: .download) }
    }
}
