import Synchronization

/// Streams one request's body into an `upload` job: cut into parts as it arrives, at most
/// `concurrency` parts in flight, the body read no faster than S3 takes the parts (a new part
/// waits for a free slot before more bytes are read), so memory stays near part size × (parts
/// in flight + 1) whatever the file's size. Parts are recorded in order, so the committed bytes
/// are always a prefix of the file; at the end of the request the bytes past the last part
/// are kept in the store as the tail. The request holds the job's lease while it streams.
public struct UploadReceiver: Sendable {
    public enum Outcome: Sendable {
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
        case failed(code: String, committed: Int64)
        /// The job was canceled meanwhile (its upload is aborted).
        case canceled
    }

    let store: any UploadStore
    let objects: any ObjectStore
    let settings: EngineSettings
    let clock: any EngineClock
    let observer: any JobObserver
    let instance: String
    /// The uploads this instance is streaming now. A lease held in the store under this
    /// instance's name for an upload not in here was left by a request that could not release it
    /// (the database was down as it ended): the next request may take it at once instead of
    /// waiting for it to lapse.
    private let streaming = StreamingUploads()

    public init(store: any UploadStore, objects: any ObjectStore, settings: EngineSettings, instance: String,
                clock: any EngineClock = SystemClock(), observer: any JobObserver = NoObserver()) {
        self.store = store
        self.objects = objects
        self.settings = settings
        self.clock = clock
        self.observer = observer
        self.instance = instance
    }

    private struct PartResult: Sendable {
        let part: Int
        let size: Int64
        let outcome: Result<String, TransferError>
        /// In the store: parts record themselves, in order, as soon as the parts before them are.
        var recorded = false
    }

    private enum Ending {
        case clean, broken, tooLarge
    }

    public func receive(jobID: String, offset: Int64, body: any ByteSource) async throws -> Outcome {
        guard streaming.begin(jobID) else { return .busy }
        defer { streaming.end(jobID) }
        // Streaming nothing else of this job here (just checked): a lease of our own on it is stale.
        guard let claim = try await store.claimUpload(id: jobID, owner: instance, leaseMilliseconds: settings.leaseMilliseconds) else {
            return .busy
        }
        let job = claim.job
        let lease = claim.lease
        guard offset == job.bytesCommitted, let key = job.objectKey else {
            try await store.releaseUpload(lease)
            return .offsetMismatch(committed: job.bytesCommitted)
        }
        do {
            return try await stream(job, key: key, lease: lease, tail: claim.tail, body: body)
        } catch is LeaseLost {
            // Canceled meanwhile, or the lease lapsed and another request took over.
            guard let now = try await store.job(id: jobID), now.state == .canceled else { return .busy }
            if let uploadID = now.uploadID { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }
            return .canceled
        }
    }

    private func stream(_ job: Job, key: String, lease: Lease, tail: [UInt8], body: any ByteSource) async throws -> Outcome {
        let options = JobOptions.decode(job.options)
        let partSize = Int(job.partSize)
        let declared = job.bytesTotal
        let concurrency = min(max(options.concurrency ?? settings.concurrency, 1), settings.maxConcurrency)
        let retryLimit = options.retryLimit ?? settings.retryLimit
        var parts = try await store.parts(of: job.id)
        var committedParts = parts.reduce(0) { $0 + $1.size }
        var nextPart = parts.count + 1
        // A part is recorded the moment it and every part before it are in S3, not when the
        // body's reader next looks: a client that pauses mid-body has its finished parts counted.
        let turns = InOrderTurns(first: nextPart)
        let store = self.store
        var uploadID = job.uploadID
        var buffer = tail
        buffer.reserveCapacity(partSize)
        var received = job.bytesCommitted
        var ending = Ending.clean
        var failedCode: String?
        let objects = self.objects, clock = self.clock, backoff = settings.backoff, random = settings.random

        // The lease is renewed on a timer for the whole request: the reader may wait on a slow
        // client, or on S3, for longer than the lease lasts.
        let leaseMilliseconds = settings.leaseMilliseconds, tick = settings.tickMilliseconds
        let renewal = Task {
            while !Task.isCancelled {
                try await clock.sleep(milliseconds: tick)
                _ = try await store.renew(lease, leaseMilliseconds: leaseMilliseconds)
            }
        }
        defer { renewal.cancel() }

        try await withThrowingTaskGroup(of: PartResult.self) { group in
            var inFlight = 0
            func settle(_ result: PartResult) {
                inFlight -= 1
                switch result.outcome {
                case .success(let etag):
                    guard result.recorded else { return }
                    parts.append(RecordedPart(number: result.part, size: result.size, etag: etag))
                    committedParts += result.size
                    observer.partMoved(kind: .upload, bytes: result.size)
                case .failure(let error):
                    observer.partFailed(kind: .upload, code: error.code)
                    failedCode = failedCode ?? error.code
                }
            }
            func launch(_ bytes: [UInt8]) async throws {
                if uploadID == nil {
                    let created = try await objects.createMultipartUpload(key: key, attributes: options.attributes)
                    try await store.start(lease, uploadID: created, partsTotal: declared.map { Int(($0 + Int64(partSize) - 1) / Int64(partSize)) } ?? 0,
                                          partSize: Int64(partSize), bytesTotal: declared ?? 0)
                    uploadID = created
                }
                while inFlight >= concurrency, let result = try await group.next() { settle(result) }
                let number = nextPart
                nextPart += 1
                inFlight += 1
                let upload = uploadID ?? ""
                group.addTask {
                    let etag: String
                    do {
                        etag = try await clock.retrying(limit: retryLimit, backoff: backoff, random: random) {
                            try await objects.uploadPart(key: key, uploadID: upload, part: number, data: .bytes(bytes))
                        }
                    } catch let error as TransferError {
                        turns.stop()  // the job fails: nothing after this part counts
                        return PartResult(part: number, size: Int64(bytes.count), outcome: .failure(error))
                    } catch {
                        turns.stop()
                        throw error
                    }
                    var result = PartResult(part: number, size: Int64(bytes.count), outcome: .success(etag))
                    guard await turns.wait(for: number) else { return result }
                    do {
                        try await store.recordUploadPart(RecordedPart(number: number, size: result.size, etag: etag), under: lease)
                    } catch {
                        turns.stop()  // committed bytes stay a prefix: no later part may be recorded
                        throw error
                    }
                    turns.recorded(number)
                    result.recorded = true
                    return result
                }
            }

            reading: while failedCode == nil {
                let chunk: ArraySlice<UInt8>?
                do {
                    chunk = try await body.next()
                } catch {
                    ending = .broken
                    break reading
                }
                guard let chunk else { break reading }
                if let declared, received + Int64(chunk.count) > declared {
                    ending = .tooLarge
                    break reading
                }
                received += Int64(chunk.count)
                var rest = chunk
                while !rest.isEmpty {
                    let take = min(partSize - buffer.count, rest.count)
                    buffer.append(contentsOf: rest.prefix(take))
                    rest = rest.dropFirst(take)
                    // A whole object of exactly one part is left for one PutObject at the end.
                    let wholeObjectIsThisPart = uploadID == nil && nextPart == 1 && declared == received && rest.isEmpty
                    if buffer.count == partSize && !wholeObjectIsThisPart {
                        let full = buffer
                        buffer = []
                        buffer.reserveCapacity(partSize)
                        do {
                            try await launch(full)
                        } catch let error as TransferError {
                            failedCode = error.code
                            break reading
                        }
                    }
                }
            }
            do {
                while let result = try await group.next() { settle(result) }
            } catch {
                turns.stop()
                throw error
            }
        }
        parts.sort { $0.number < $1.number }

        if let failedCode {
            // A part S3 refused past the retry limit fails the job, as for every job type, and
            // its multipart upload is aborted so nothing is left behind.
            return try await fail(lease, key: key, uploadID: uploadID, code: failedCode)
        }
        let atEnd = ending == .clean && (declared == nil || received == declared)
        guard atEnd else {
            try await store.saveUploadTail(buffer, under: lease)
            try await store.releaseUpload(lease)
            let committed = committedParts + Int64(buffer.count)
            if ending == .tooLarge, let declared { return .tooLarge(declared: declared, committed: committed) }
            return .waiting(committed: committed)
        }

        // The last bytes: one PutObject for a small object, else the last part and completion.
        do {
            let etag: String
            if let uploadID {
                if !buffer.isEmpty || parts.isEmpty {
                    let number = nextPart
                    let tailBytes = buffer
                    let partETag = try await clock.retrying(limit: retryLimit, backoff: settings.backoff, random: settings.random) {
                        try await objects.uploadPart(key: key, uploadID: uploadID, part: number, data: .bytes(tailBytes))
                    }
                    let part = RecordedPart(number: number, size: Int64(tailBytes.count), etag: partETag)
                    try await store.recordUploadPart(part, under: lease)
                    observer.partMoved(kind: .upload, bytes: part.size)
                    parts.append(part)
                }
                etag = try await objects.completeMultipartUpload(key: key, uploadID: uploadID, parts: parts)
                if let expected = MultipartETag.expected(for: parts.map(\.etag)), !MultipartETag.same(expected, etag) {
                    return try await fail(lease, key: key, uploadID: uploadID, code: "ETagMismatch")
                }
                guard try await objects.size(of: key).size == received else {
                    return try await fail(lease, key: key, uploadID: nil, code: "SizeMismatch")
                }
            } else {
                let whole = buffer
                etag = try await clock.retrying(limit: retryLimit, backoff: settings.backoff, random: settings.random) {
                    try await objects.putObject(key: key, data: .bytes(whole), attributes: options.attributes)
                }
                let part = RecordedPart(number: 1, size: Int64(whole.count), etag: etag)
                try await store.recordUploadPart(part, under: lease)
                observer.partMoved(kind: .upload, bytes: part.size)
            }
            try await store.finish(lease, state: .completed, etag: etag, error: nil)
            observer.jobEnded(kind: .upload, state: .completed)
            return .completed(etag: etag, size: received)
        } catch let error as TransferError {
            observer.partFailed(kind: .upload, code: error.code)
            return try await fail(lease, key: key, uploadID: uploadID, code: error.code)
        }
    }

    /// The job fails: S3 refused a part for good, or the object came out wrong.
    private func fail(_ lease: Lease, key: String, uploadID: String?, code: String) async throws -> Outcome {
        if let uploadID { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }
        try await store.finish(lease, state: .failed, etag: nil, error: Job.errorJSON(code: code))
        observer.jobEnded(kind: .upload, state: .failed)
        return .failed(code: code, committed: 0)
    }
}

/// Job ids with a request streaming their bytes on this instance.
final class StreamingUploads: Sendable {
    private let ids = Mutex<Set<String>>([])

    /// False when a request of this instance streams `id` already.
    func begin(_ id: String) -> Bool { ids.withLock { $0.insert(id).inserted } }

    func end(_ id: String) { _ = ids.withLock { $0.remove(id) } }
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
