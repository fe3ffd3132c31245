import Crypto
import Synchronization

/// Streams one request's body into an `upload` job. The bytes go to the spool as they arrive
/// (the tail file); each time the tail holds a whole part it becomes that part's file and is sent
/// to S3 from there, at most `concurrency` parts in flight, while the next bytes fill a new tail.
/// The body is read no faster than that: a part waits for a free slot, and every file waits for
/// room on the spool, so memory is one read buffer per request whatever the part size or the
/// number of uploads. Parts are recorded in order, so the committed bytes are always a prefix of
/// the file. At the end of the request the bytes past the last part are staged as objects
/// (`TailSegment`) the store lists, so any instance continues with the next request; this
/// instance keeps its copy on the spool and reuses it when nobody else wrote meanwhile. The
/// request holds the job's lease while it streams; a pause or cancel ends it at once.
public struct UploadReceiver: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// The object is complete in S3.
        case completed(etag: String, size: Int64)
        /// The body ended (or broke) before the end: the upload waits at `committed` bytes.
        case waiting(committed: Int64)
        /// The request's offset is not the upload's committed bytes.
        case offsetMismatch(committed: Int64)
        /// Another request is streaming this upload, or it does not wait for bytes.
        case busy
        /// More bytes than the size declared at creation; the upload waits at `committed`.
        case tooLarge(declared: Int64, committed: Int64)
        /// S3 refused a part for good (after retries): the job failed and its upload is aborted.
        case failed(code: FailureCode, committed: Int64)
        /// The job was canceled meanwhile (its upload is aborted).
        case canceled
        /// The job was paused meanwhile: the upload waits at `committed` until it is resumed.
        case paused(committed: Int64)
        /// The request's bytes do not match its checksum: none of them was kept.
        case checksumMismatch(committed: Int64)
        /// No room now (memory or spool budget) for more bytes: the upload waits at `committed`;
        /// the client should try again shortly.
        case noRoom(committed: Int64)
        /// S3 did not answer past the retries (an outage): the upload waits at `committed`, its
        /// multipart upload and recorded parts kept; the client sends the rest once S3 is back.
        case unavailable(committed: Int64)
    }

    /// A digest the request's bytes must have (tus `Upload-Checksum`, an upload job's RFC 9530
    /// `Content-Digest`), computed as the body is read; until it is checked at the end of the
    /// body, nothing of the request is recorded.
    public struct Checksum: Sendable {
        public let algorithm: Digest.Algorithm
        public let expected: [UInt8]

        public init(algorithm: Digest.Algorithm, expected: [UInt8]) {
            self.algorithm = algorithm
            self.expected = expected
        }
    }

    let store: any UploadJobStore
    let objects: any ObjectStore
    let spool: any Spool
    let settings: EngineSettings
    let clock: any EngineClock
    let observer: any JobObserver
    let instance: String
    /// Word of job changes (pause, cancel) from any instance, when the gateway hears them.
    let signals: (any JobSignals)?
    /// The uploads this instance is streaming now. A lease held in the store under this
    /// instance's name for an upload not in here was left by a request that could not release it
    /// (the database was down as it ended): the next request may take it at once instead of
    /// waiting for it to lapse.
    private let streaming = StreamingUploads()
    /// The tails this instance's spool holds, by job, with the pieces each was last saved as:
    /// reused only while the store still lists exactly those pieces.
    private let localTails = LocalTails()

    public init(
        store: any UploadJobStore, objects: any ObjectStore, spool: any Spool, settings: EngineSettings,
        instance: String, clock: any EngineClock = SystemClock(), observer: any JobObserver = NoObserver(),
        signals: (any JobSignals)? = nil
    ) {
        self.signals = signals
        self.store = store
        self.objects = objects
        self.spool = spool
        self.settings = settings
        self.clock = clock
        self.observer = observer
        self.instance = instance
    }

    public func receive(jobID: String, offset: Int64, body: any ByteSource, checksum: Checksum? = nil) async throws -> Outcome {
        guard streaming.begin(jobID) else { return .busy }
        defer { streaming.end(jobID) }
        // Streaming nothing else of this job here (just checked): a lease of our own on it is stale.
        guard let claim = try await store.claimUpload(id: jobID, owner: instance, leaseMilliseconds: settings.leaseMilliseconds) else {
            // Not claimable: paused (or canceled) since the route looked, or another request sends.
            let now = try await store.job(id: jobID)
            switch now?.state {
            case .paused?: return .paused(committed: now?.bytesCommitted ?? 0)
            case .canceled?: return .canceled
            default: return .busy
            }
        }
        let job = claim.job
        guard offset == job.bytesCommitted, let key = job.objectKey else {
            try await store.releaseUpload(claim.lease)
            return .offsetMismatch(committed: job.bytesCommitted)
        }
        // Bytes received onto the spool, shown at least once a second while they arrive.
        let meter = ProgressMeter(job.bytesCommitted), completion = CompletionMark()
        let lifetime = LeaseLifetime<Outcome>(
            store: store, clock: clock, tickMilliseconds: settings.tickMilliseconds,
            leaseMilliseconds: settings.leaseMilliseconds, signals: signals, progress: meter,
            completion: completion)
        let request = UploadRequest(
            receiver: self, claim: claim, key: key, body: body, checksum: checksum, meter: meter,
            completion: completion)
        // An upload job given `timeoutSeconds` must be whole that long after it was made.
        let deadline = job.options.timeoutSeconds.map { Int(job.createdAt) + $0 * 1000 }
        let ending: LeaseLifetime<Outcome>.Ending
        do {
            if let deadline, clock.now() >= deadline { return try await timedOut(claim, key: key) }
            ending = try await lifetime.run(claim.lease, deadline: deadline, { try await request.run() })
        } catch let error as TransferError where error.retryable {
            return try await unavailable(claim)
        } catch is StorageUnavailable {
            return try await unavailable(claim)
        } catch is ByteBudget.TooLarge {
            // A part larger than the whole spool can never be taken: the upload cannot go on.
            if let uploadID = job.uploadID { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }
            try await store.finish(claim.lease, state: .failed, etag: nil, error: JobFailure(.spoolTooSmall))
            spool.removeAll(jobID: jobID, keeping: [])
            return .failed(code: .spoolTooSmall, committed: 0)
        }
        switch ending {
        case .finished(let outcome):
            return outcome
        case .timedOut, .stalled:
            localTails.forget(jobID)
            return try await timedOut(claim, key: key)
        case .leaseLost:
            // Paused or canceled meanwhile, or the lease lapsed and another request took over.
            localTails.forget(jobID)
            spool.removeAll(jobID: jobID, keeping: [])
            guard let now = try await store.job(id: jobID) else { return .busy }
            switch now.state {
            case .canceled:
                if let uploadID = now.uploadID { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }
                await deleteStaged(claim.tail)
                return .canceled
            case .paused:
                return .paused(committed: now.bytesCommitted)
            default:
                return .busy
            }
        }
    }

    /// S3 is away past the retries: the request ends with the upload waiting at what the store
    /// holds (recorded parts and staged tail pieces); bytes of this request past that are
    /// dropped here, and the client sends them again from `Upload-Offset`.
    private func unavailable(_ claim: UploadClaim) async throws -> Outcome {
        localTails.forget(claim.job.id)
        spool.removeAll(jobID: claim.job.id, keeping: [])
        try? await store.releaseUpload(claim.lease)
        let now = try await store.job(id: claim.job.id)
        return .unavailable(committed: now?.bytesCommitted ?? claim.job.bytesCommitted)
    }

    /// The upload outlived its `timeoutSeconds`: it fails (`JobTimeout`), leaving nothing behind.
    private func timedOut(_ claim: UploadClaim, key: String) async throws -> Outcome {
        let now = try await store.job(id: claim.job.id) ?? claim.job
        if let uploadID = now.uploadID { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }
        try await store.finish(claim.lease, state: .failed, etag: nil, error: JobFailure(.jobTimeout))
        spool.removeAll(jobID: claim.job.id, keeping: [])
        await deleteStaged(claim.tail)
        observer.jobEnded(kind: .upload, state: .failed)
        return .failed(code: .jobTimeout, committed: now.bytesCommitted)
    }

    /// Waits at most `roomWaitMilliseconds` for a reservation; nil when there is no room.
    func room<T: Sendable>(_ reserve: @escaping @Sendable () async throws -> T) async throws -> T? {
        let clock = self.clock, wait = settings.roomWaitMilliseconds
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await reserve() }
            group.addTask {
                try await clock.sleep(milliseconds: wait)
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                return result
            }
            return nil
        }
    }

    /// Removes staged tail pieces (best effort: the janitor sweeps what is left).
    func deleteStaged(_ segments: [TailSegment]) async {
        for segment in segments { try? await objects.deleteObject(key: segment.key) }
    }

    func rememberTail(_ jobID: String, _ segments: [TailSegment]) { localTails.remember(jobID, segments) }
    func localTail(_ jobID: String) -> [TailSegment]? { localTails.current(jobID) }
    func forgetTail(_ jobID: String) { localTails.forget(jobID) }
}

/// A part failed past its retries in a way that may pass (S3 away): the request ends and the
/// upload waits (`UploadReceiver.Outcome.unavailable`).
struct StorageUnavailable: Error {}

/// Job ids with a request streaming their bytes on this instance.
final class StreamingUploads: Sendable {
    private let ids = Mutex<Set<String>>([])

    /// False when a request of this instance streams `id` already.
    func begin(_ id: String) -> Bool { ids.withLock { $0.insert(id).inserted } }

    func end(_ id: String) { _ = ids.withLock { $0.remove(id) } }
}

/// The tails on this instance's spool and the pieces each was last saved as.
final class LocalTails: Sendable {
    private let tails = Mutex<[String: [TailSegment]]>([:])

    func current(_ id: String) -> [TailSegment]? { tails.withLock { $0[id] } }
    func remember(_ id: String, _ segments: [TailSegment]) { tails.withLock { $0[id] = segments } }
    func forget(_ id: String) { _ = tails.withLock { $0.removeValue(forKey: id) } }
}

/// Parts finished out of order take their turns to be recorded in order (committed bytes are
/// always a prefix of the file). Once stopped (a part failed, or could not be recorded, or the
/// request ended), no waiting or later part is recorded.
final class InOrderTurns: Sendable {
    private struct State {
        var next: Int
        var stopped = false
        var waiting: [Int: CheckedContinuation<Bool, Never>] = [:]
    }

    private let state: Mutex<State>

    init(first: Int) {
        state = Mutex(State(next: first))
    }

    /// Waits until every part before `number` is recorded; false when recording has stopped.
    func wait(for number: Int) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now: Bool? = state.withLock { s in
                    if s.stopped || Task.isCancelled { return false }
                    if s.next == number { return true }
                    s.waiting[number] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            stop()
        }
    }

    func recorded(_ number: Int) {
        let successor = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            s.next = number + 1
            return s.stopped ? nil : s.waiting.removeValue(forKey: number + 1)
        }
        successor?.resume(returning: true)
    }

    func stop() {
        let waiting = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            s.stopped = true
            defer { s.waiting = [:] }
            return Array(s.waiting.values)
        }
        for continuation in waiting { continuation.resume(returning: false) }
    }
}
