import Synchronization

/// Runs one server-side job (`copy`, `import`) from its lease to its end (a `download` is pinned
/// and completed when it is made; an `upload` takes its bytes from requests, `UploadReceiver`).
///
/// One lifetime from claim to end: in every phase (sizing the source, reading a stream, moving
/// parts, completing) the lease is renewed on a timer, and a lost lease (pause, cancel, another
/// instance) or the running-time limit stops the work at once. Every type is then the same loop
/// over a part plan: at most `concurrency` parts in flight, each part recorded in the job store
/// before it counts, retries with backoff for errors a retry can help. What differs is `Work`:
/// where a part comes from and where it lands (a multipart upload, or the spool file of a
/// download). An import whose source cannot be read in ranges is streamed instead
/// (`JobRunner+Stream`). After a crash the next owner resumes from the recorded parts it can
/// still trust: ListParts for uploads, a re-hash of the spool for downloads.
public struct JobRunner: Sendable {
    public enum Outcome: Sendable, Equatable {
        case completed(etag: String)
        case failed(code: FailureCode)
        /// Paused or canceled by the owner (the lease was released, or the upload aborted), or
        /// handed back to the queue (`queued`) so that another identity's job can run.
        case stopped(Job.State)
        /// Sent back to `queued` by a failure that may pass, to run again at `retryAt` (Unix
        /// milliseconds) with its parts kept.
        case postponed(retryAt: Int64)
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
    /// Where a copy finds its source's whole-object checksum (absent: a copy of an object with
    /// no known checksum reports none).
    let checksums: (any ObjectChecksumStore)?

    public init(
        store: any JobStore, objects: any ObjectStore, fetcher: (any SourceFetcher)? = nil,
        spool: (any Spool)? = nil, settings: EngineSettings, clock: any EngineClock = SystemClock(),
        observer: any JobObserver = NoObserver(), checksums: (any ObjectChecksumStore)? = nil
    ) {
        self.checksums = checksums
        self.store = store
        self.objects = objects
        self.fetcher = fetcher
        self.spool = spool
        self.settings = settings
        self.clock = clock
        self.observer = observer
    }

    /// A job that cannot go on, with the `error` it ends with.
    struct Failure: Error {
        let failure: JobFailure

        init(code: FailureCode) { failure = JobFailure(code) }

        init(_ failure: JobFailure) { self.failure = failure }
    }

    public func run(_ job: Job, lease: Lease, control: JobControl = JobControl()) async throws -> Outcome {
        let upload = MultipartUploadHandle(job.uploadID, checksum: job.partChecksum)
        if job.crashes >= settings.crashLimit {
            // Its holder died this many times: running it again would likely kill a fourth.
            return try await fail(lease, job, JobFailure(.crashLoop), upload: upload)
        }
        let options = job.options
        // Wall-clock limits are opt-in; the stall limit holds always: no byte moving that long.
        let start = clock.now()
        let deadline = (options.timeoutSeconds ?? settings.timeoutSeconds).map { start + max(1, $0) * 1000 }
        var lifetime = LeaseLifetime<Outcome>(
            store: store, clock: clock, tickMilliseconds: settings.tickMilliseconds,
            leaseMilliseconds: settings.leaseMilliseconds, progress: control.meter,
            completion: control.completion)
        lifetime.stallMilliseconds = max(1, options.stallTimeoutSeconds ?? settings.stallTimeoutSeconds) * 1000
        let ending = try await lifetime.run(lease, deadline: deadline) {
            try await self.work(job, options, lease, upload, control)
        }
        // Stopped by a limit, the job keeps its parts: its owner may retry it.
        switch ending {
        case .finished(let outcome): return outcome
        case .leaseLost: return try await whyLeaseEnded(job, upload: upload)
        case .timedOut: return try await fail(lease, job, JobFailure(.jobTimeout).resumable, upload: upload)
        case .stalled: return try await fail(lease, job, JobFailure(.stalled).resumable, upload: upload)
        }
    }

    /// A job's bytes and how each part moves, once its source is known.
    struct Work: Sendable {
        let plan: PartPlan
        /// The object the parts make (a multipart upload of it).
        let key: String
        /// Moves part `part` (its byte `range`) into the upload, whose parts `checksum` checks;
        /// returns what is recorded as its ETag and checksum.
        let move:
            @Sendable (_ part: Int, _ range: ClosedRange<Int64>?, _ uploadID: String?, _ checksum: PartChecksum) async throws
                -> (etag: String, checksum: String?)
        /// A cheaper call for a one-part object (CopyObject, PutObject), where there is one. It
        /// calls `completing` right before the write that makes the object.
        /// Returns the object's ETag and, when its bytes passed through, their CRC-32C (base64).
        let single: (@Sendable (_ completing: @Sendable () async throws -> Void) async throws -> (etag: String, checksum: String?))?
        /// The source's ETag, if it has one.
        let sourceETag: String?
        /// What the new object is created with, when not just the job's options (a copy keeps
        /// the source's attributes where its options leave them).
        var attributes: ObjectAttributesSpec? = nil
        /// How a new multipart upload for these parts checks them (nil: parts with no body of
        /// ours to check, such as a copy's).
        var partChecksum: PartChecksum? = nil
        /// The identity whose share of the memory budget the parts' buffers count against.
        var owner: String? = nil
    }

    /// What a job does, once its source is known.
    enum Preparation: Sendable {
        case parts(Work)
        /// An import whose source serves no ranges: read once, in order (`JobRunner+Stream`).
        case stream(StreamSource)
    }

    private func work(
        _ job: Job, _ options: JobOptions, _ lease: Lease, _ upload: MultipartUploadHandle,
        _ control: JobControl
    ) async throws -> Outcome {
        let work: Work
        do {
            switch try await prepare(job, options, control) {
            case .parts(var prepared):
                prepared.owner = job.owner
                work = prepared
            case .stream(let source): return try await stream(job, options, lease, source, upload, control)
            }
            try checkPinned(job, size: work.plan.objectSize, etag: work.sourceETag)
        } catch let failure as Failure {
            return try await giveUp(lease, job, failure.failure, upload: upload)
        } catch let error as TransferError {
            return try await giveUp(lease, job, JobFailure(error), upload: upload)
        } catch is YieldedWhileWaiting {
            try await store.release(lease)
            return .stopped(.queued)
        }
        do {
            if work.plan.isSinglePart, let single = work.single {
                return try await moveWhole(job, options, lease, work, control, single)
            }
            let recorded: [Int: RecordedPart]
            switch try await resume(job, options, lease, work, upload) {
            case .completed(let etag): return .completed(etag: etag)
            case .parts(let parts): recorded = parts
            }
            return try await moveParts(job, options, lease, work, upload, recorded, control)
        } catch let error as TransferError {
            return try await giveUp(lease, job, JobFailure(error), upload: upload)
        } catch let failure as Failure {
            return try await giveUp(lease, job, failure.failure, upload: upload)
        } catch is YieldedWhileWaiting {
            try await store.release(lease)
            return .stopped(.queued)
        }
    }

    /// A source that is not what the job pinned when it planned its parts fails the job: the
    /// parts already moved are of the old version.
    func checkPinned(_ job: Job, size: Int64?, etag: String?) throws {
        guard job.partsTotal != nil else { return }
        if let pinned = job.sourceETag, let etag, !MultipartETag.same(pinned, etag) {
            throw Failure(code: .sourceChanged)
        }
        if let size, let total = job.bytesTotal, total != size { throw Failure(code: .sourceChanged) }
    }

    /// One CopyObject or PutObject for a one-part object.
    private func moveWhole(
        _ job: Job, _ options: JobOptions, _ lease: Lease, _ work: Work, _ control: JobControl,
        _ single: @escaping @Sendable (_ completing: @Sendable () async throws -> Void) async throws -> (etag: String, checksum: String?)
    )
        async throws -> Outcome
    {
        let plan = work.plan
        try await store.start(
            lease, uploadID: nil, partsTotal: 1, partSize: plan.partSize, bytesTotal: plan.objectSize,
            sourceETag: work.sourceETag)
        let settings = self.settings, clock = self.clock, store = self.store
        let pace = Pace(bytesPerSecond: options.bandwidthLimit, clock: clock)
        let completing: @Sendable () async throws -> Void = { try await control.completion.begin(store, lease) }
        let (etag, crc) = try await settings.transferring(for: job.owner) {
            try await clock.retrying(
                limit: options.retryLimit ?? settings.retryLimit, backoff: settings.backoff,
                random: settings.random
            ) { try await single(completing) }
        }
        // `bandwidthLimit` holds for a one-part object too: it counts once its bytes would have
        // moved at the limit.
        if let pace { try await clock.sleep(until: pace.time(forBytes: plan.objectSize)) }
        try Task.checkCancellation()
        observer.partMoved(kind: job.kind, bytes: plan.objectSize)
        let part = RecordedPart(number: 1, size: plan.objectSize, etag: etag, checksum: crc)
        try await store.recordPart(part, under: lease)
        cleanUp(job, after: .completed)
        let checksum = try await objectChecksum(job, work, parts: [part], etag: etag)
        try await store.finish(lease, state: .completed, etag: etag, error: nil, checksum: checksum)
        observer.jobEnded(kind: job.kind, state: .completed)
        return .completed(etag: etag)
    }

    private enum Resumed {
        case completed(etag: String)
        case parts([Int: RecordedPart])
    }

    /// Parts already done by a previous owner, trusted only where the destination holds them
    /// too; a fresh multipart upload (and plan) otherwise.
    private func resume(
        _ job: Job, _ options: JobOptions, _ lease: Lease, _ work: Work, _ upload: MultipartUploadHandle
    ) async throws -> Resumed {
        let plan = work.plan
        var recorded: [Int: RecordedPart] = [:]
        let key = work.key
        if let existing = job.uploadID {
            do {
                // A part number sent twice is the later upload in S3's eyes, as in listParts.
                let held = Dictionary(
                    try await objects.listParts(key: key, uploadID: existing).map { ($0.number, $0) },
                    uniquingKeysWith: { _, later in later })
                for part in try await store.parts(of: job.id) where plan.holds(part) && held[part.number]?.etag == part.etag {
                    recorded[part.number] = part
                }
                return .parts(recorded)
            } catch let error as TransferError where error.code == .noSuchUpload {
                // The previous owner died after completing the upload but before recording
                // it: the object is done if it is exactly what the recorded parts make.
                if let etag = try await completedBefore(job, key: key, plan: plan) {
                    try await store.finish(lease, state: .completed, etag: etag, error: nil)
                    observer.jobEnded(kind: job.kind, state: .completed)
                    return .completed(etag: etag)
                }
            }
        }
        try await abortOrphans(job, key: key)
        let created = try await objects.createMultipartUpload(
            key: key, attributes: work.attributes ?? options.attributes,
            checksum: work.partChecksum)
        upload.set(created, checksum: work.partChecksum)
        try await store.start(
            lease, uploadID: created, partChecksum: work.partChecksum, partsTotal: plan.partCount, partSize: plan.partSize,
            bytesTotal: plan.objectSize, sourceETag: work.sourceETag)
        return .parts(recorded)
    }

    /// A previous owner may have died between creating an upload and recording its id: such an
    /// upload belongs to no one, so it is aborted, not leaked. Only one begun half a lease ago or
    /// more: a dead owner's is at least a lease old by now, while one that another writer of
    /// this key has just begun and not yet recorded is younger.
    func abortOrphans(_ job: Job, key: String) async throws {
        guard job.attempts > 1 else { return }
        let inUse = try await store.uploadIDsInUse(key: key)
        let orphanAge = Double(settings.leaseMilliseconds) / 2000
        for orphan in try await objects.openUploads(key: key, olderThan: orphanAge) where !inUse.contains(orphan) {
            try? await objects.abortMultipartUpload(key: key, uploadID: orphan)
        }
    }
}

/// The multipart upload a job writes, once it is known: its ending (failure, cancel) aborts it
/// even when the work that created it was stopped midway.
final class MultipartUploadHandle: Sendable {
    private let value: Mutex<(id: String?, checksum: PartChecksum?)>

    init(_ id: String?, checksum: PartChecksum?) { value = Mutex((id, checksum)) }

    var id: String? { value.withLock { $0.id } }

    /// How its parts are checked: `Content-MD5` for an upload from before this was recorded.
    var checksum: PartChecksum { value.withLock { $0.checksum } ?? .md5 }

    func set(_ id: String, checksum: PartChecksum?) { value.withLock { $0 = (id, checksum) } }

    func clear() { value.withLock { $0 = (nil, nil) } }
}
