import Foundation

/// Runs a `copy` job: CopyObject when one part is enough, else a multipart upload filled with
/// parallel UploadPartCopy. Every finished part is recorded in the job store before it counts;
/// after a crash the job resumes from the recorded parts that S3 also holds (ListParts). The
/// lease is renewed on every tick; losing it stops the run without another write.
public struct CopyJobRunner: Sendable {
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
    let settings: EngineSettings
    let now: @Sendable () -> Int

    public init(store: any JobStore, objects: any ObjectStore, settings: EngineSettings,
                now: @escaping @Sendable () -> Int = { Int(Date().timeIntervalSince1970 * 1000) }) {
        self.store = store
        self.objects = objects
        self.settings = settings
        self.now = now
    }

    private enum Event: Sendable {
        case copied(part: Int, size: Int64, etag: String)
        case failed(part: Int, error: ObjectStoreError)
        case tick
    }

    public func run(_ job: Job, lease initialLease: Lease) async throws -> Outcome {
        var lease = initialLease
        guard let source = ObjectSource.decode(job.source), let key = job.objectKey else {
            return try await fail(lease, code: "InvalidJob", uploadID: nil, key: job.objectKey)
        }
        let options = JobOptions.decode(job.options)
        let sourceInfo: (size: Int64, etag: String)
        do {
            sourceInfo = try await objects.size(of: source.key)
        } catch let error as ObjectStoreError {
            return try await fail(lease, code: error.code, uploadID: nil, key: key)
        }
        let plan: PartPlan
        do {
            plan = try PartPlan(objectSize: sourceInfo.size, requestedPartSize: options.partSize ?? settings.partSize,
                                maximumObjectSize: settings.maxObjectSize)
        } catch {
            return try await fail(lease, code: "EntityTooLarge", uploadID: nil, key: key)
        }
        if plan.isSinglePart {
            do {
                try await store.start(lease, uploadID: nil, partsTotal: 1, partSize: plan.partSize, bytesTotal: plan.objectSize)
                let etag = try await objects.copyObject(from: source.key, to: key, attributes: options.attributes)
                try await store.recordPart(RecordedPart(number: 1, size: plan.objectSize, etag: etag), under: lease)
                try await store.finish(lease, state: .completed, etag: etag, error: nil)
                return .completed(etag: etag)
            } catch is LeaseLost {
                return .leaseLost
            } catch let error as ObjectStoreError {
                return try await fail(lease, code: error.code, uploadID: nil, key: key)
            }
        }

        // Multipart: reuse the upload a previous owner started, trusting only parts S3 holds too.
        let uploadID: String
        var completed: Set<Int> = []
        var recorded: [Int: RecordedPart] = [:]
        do {
            if let existing = job.uploadID {
                uploadID = existing
                let held = Dictionary(try await objects.listParts(key: key, uploadID: existing).map { ($0.number, $0) },
                                      uniquingKeysWith: { a, _ in a })
                for part in try await store.parts(of: job.id) where held[part.number]?.etag == part.etag && part.size == plan.size(ofPart: part.number) {
                    completed.insert(part.number)
                    recorded[part.number] = part
                }
            } else {
                uploadID = try await objects.createMultipartUpload(key: key, attributes: options.attributes)
                try await store.start(lease, uploadID: uploadID, partsTotal: plan.partCount, partSize: plan.partSize,
                                      bytesTotal: plan.objectSize)
            }
        } catch is LeaseLost {
            return .leaseLost
        } catch let error as ObjectStoreError {
            return try await fail(lease, code: error.code, uploadID: nil, key: key)
        }

        let concurrency = min(max(options.concurrency ?? settings.concurrency, 1), settings.maxConcurrency)
        var scheduler = PartScheduler(partCount: plan.partCount, concurrency: concurrency,
                                      retryLimit: options.retryLimit ?? settings.retryLimit, backoff: settings.backoff,
                                      completed: completed)
        let objects = self.objects
        let tick = settings.tickMilliseconds
        // bandwidthLimit paces part starts: part n may start once the bytes of the parts
        // started before it in this run would have moved at the limit.
        let pacing = options.bandwidthLimit.map { Pacing(bytesPerSecond: $0, start: ContinuousClock.now) }
        var bytesScheduled: Int64 = 0
        let outcome: Outcome = try await withThrowingTaskGroup(of: Event.self) { group in
            func launch(_ actions: [PartScheduler.Action]) -> PartScheduler.Action? {
                for action in actions {
                    switch action {
                    case .start(let part, _):
                        let range = plan.range(ofPart: part)
                        let size = plan.size(ofPart: part)
                        let notBefore = pacing?.slot(afterBytes: bytesScheduled)
                        bytesScheduled += size
                        group.addTask {
                            do {
                                if let notBefore { try await Task.sleep(until: notBefore, clock: .continuous) }
                                let etag = try await objects.copyPart(key: key, uploadID: uploadID, part: part, sourceKey: source.key, range: range)
                                return .copied(part: part, size: size, etag: etag)
                            } catch let error as ObjectStoreError {
                                return .failed(part: part, error: error)
                            } catch {
                                return .failed(part: part, error: ObjectStoreError(code: "InternalError", retryable: true))
                            }
                        }
                    case .finish, .fail:
                        return action
                    }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(tick))
                return .tick
            }
            var terminal = launch(scheduler.nextActions(now: now()))
            while terminal == nil, let event = try await group.next() {
                switch event {
                case .copied(let part, let size, let etag):
                    let record = RecordedPart(number: part, size: size, etag: etag)
                    do {
                        try await store.recordPart(record, under: lease)
                    } catch is LeaseLost {
                        group.cancelAll()
                        return try await whyLeaseEnded(job.id, key: key, uploadID: uploadID)
                    }
                    recorded[part] = record
                    scheduler.partSucceeded(part)
                case .failed(let part, let error):
                    if let action = scheduler.partFailed(part, retryable: error.retryable, error: error.code, now: now()) {
                        terminal = action
                    }
                case .tick:
                    do {
                        lease = try await store.renew(lease, leaseMilliseconds: settings.leaseMilliseconds)
                    } catch is LeaseLost {
                        group.cancelAll()
                        return try await whyLeaseEnded(job.id, key: key, uploadID: uploadID)
                    }
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(tick))
                        return .tick
                    }
                }
                if terminal == nil { terminal = launch(scheduler.nextActions(now: now())) }
            }
            group.cancelAll()
            switch terminal {
            case .fail(_, let code)?:
                return .failed(code: code)
            default:
                let parts = recorded.values.sorted { $0.number < $1.number }
                do {
                    let etag = try await objects.completeMultipartUpload(key: key, uploadID: uploadID, parts: parts)
                    let check = try await objects.size(of: key)
                    guard check.size == plan.objectSize else { return .failed(code: "SizeMismatch") }
                    return .completed(etag: etag)
                } catch let error as ObjectStoreError {
                    return .failed(code: error.code)
                }
            }
        }
        switch outcome {
        case .completed(let etag):
            do {
                try await store.finish(lease, state: .completed, etag: etag, error: nil)
            } catch is LeaseLost {
                return .leaseLost
            }
            return outcome
        case .failed(let code):
            return try await fail(lease, code: code, uploadID: uploadID, key: key)
        case .stopped, .leaseLost:
            return outcome
        }
    }

    /// When the bytes before a part would have moved at `bytesPerSecond`.
    struct Pacing: Sendable {
        let bytesPerSecond: Int64
        let start: ContinuousClock.Instant

        func slot(afterBytes bytes: Int64) -> ContinuousClock.Instant {
            start + .milliseconds(bytes * 1000 / max(1, bytesPerSecond))
        }
    }

    /// Paused, canceled, or taken over: the stored state says which. A canceled job's upload is
    /// aborted here, since this runner is the one that knows it is open.
    private func whyLeaseEnded(_ id: String, key: String, uploadID: String) async throws -> Outcome {
        switch try await store.job(id: id)?.state {
        case .canceled?:
            let objects = self.objects
            await Task.detached { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }.value
            return .stopped(.canceled)
        case .paused?:
            return .stopped(.paused)
        default:
            return .leaseLost
        }
    }

    /// Ends the job as failed, aborting its multipart upload so nothing is left behind.
    private func fail(_ lease: Lease, code: String, uploadID: String?, key: String?) async throws -> Outcome {
        if let uploadID, let key { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }
        let error = "{\"code\":\"\(code.filter { $0.isLetter || $0.isNumber })\"}"
        do {
            try await store.finish(lease, state: .failed, etag: nil, error: error)
        } catch is LeaseLost {
            return .leaseLost
        }
        return .failed(code: code)
    }
}
