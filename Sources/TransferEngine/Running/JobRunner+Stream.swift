import Crypto

/// An import source that serves no ranges: its body is read once, in order.
struct StreamSource: Sendable {
    let url: String
    let key: String
    /// What the source said its size is, if it did.
    let size: Int64?
    let etag: String?
}

/// Imports from sources without ranges: the body is streamed straight into spooled parts (each
/// reserved on the spool first, so the stream waits for room rather than filling the disk) and
/// every full part goes to S3 from its file while the stream goes on, at most `concurrency` in
/// flight; when they are all busy the stream is not read, so the source waits too. A broken
/// stream, or a run that resumes after a crash, reads the source again from its first byte and
/// sends only the parts whose bytes S3 does not already hold (same size and MD5).
extension JobRunner {
    func stream(_ job: Job, _ options: JobOptions, _ lease: Lease, _ source: StreamSource, _ upload: UploadHandle,
                _ control: JobControl) async throws -> Outcome {
        do {
            try checkPinned(job, size: source.size, etag: source.etag)
            let partSize = job.partsTotal != nil ? job.partSize : options.partSize ?? settings.partSize
            var recorded: [Int: RecordedPart] = [:]
            if let existing = upload.id {
                do {
                    let held = Dictionary(try await objects.listParts(key: source.key, uploadID: existing).map { ($0.number, $0) },
                                          uniquingKeysWith: { _, later in later })
                    for part in try await store.parts(of: job.id) where held[part.number]?.etag == part.etag && part.size <= partSize {
                        recorded[part.number] = part
                    }
                } catch let error as TransferError where error.code == "NoSuchUpload" {
                    upload.clear()
                }
            }
            if upload.id == nil { try await abortOrphans(job, key: source.key) }
            let retryLimit = options.retryLimit ?? settings.retryLimit
            var attempt = 1
            while true {
                do {
                    return try await streamOnce(job, options, lease, source, partSize: partSize, upload: upload, recorded: &recorded)
                } catch let error as TransferError where error.retryable && attempt <= retryLimit {
                    observer.partFailed(kind: job.kind, code: error.code)
                    try await clock.sleep(milliseconds: settings.backoff.delay(retry: attempt, unit: settings.random()))
                    attempt += 1
                }
            }
        } catch let failure as Failure {
            return try await fail(lease, job, code: failure.code, upload: upload)
        } catch let error as TransferError {
            observer.partFailed(kind: job.kind, code: error.code)
            return try await fail(lease, job, code: error.code, upload: upload)
        } catch is ByteBudget.TooLarge {
            return try await fail(lease, job, code: FailureCode.spoolTooSmall, upload: upload)
        } catch is SpoolError {
            return try await fail(lease, job, code: FailureCode.spoolFailed, upload: upload)
        }
    }

    /// One read of the whole source; parts S3 already holds (from `recorded`) are not sent again.
    private func streamOnce(_ job: Job, _ options: JobOptions, _ lease: Lease, _ source: StreamSource, partSize: Int64,
                            upload: UploadHandle, recorded: inout [Int: RecordedPart]) async throws -> Outcome {
        guard let fetcher, let spool else { throw Failure(code: FailureCode.invalidJob) }
        let streamBuffer = try await settings.memory.reserve(settings.transferBufferBytes)
        defer { streamBuffer.release() }
        let body = try await fetcher.stream(source.url, limit: settings.maxObjectSize)
        let concurrency = min(max(options.concurrency ?? settings.concurrency, 1), settings.maxConcurrency)
        let retryLimit = options.retryLimit ?? settings.retryLimit
        let store = self.store, objects = self.objects, clock = self.clock, observer = self.observer
        let memory = settings.memory, buffer = settings.transferBufferBytes, backoff = settings.backoff, random = settings.random
        let kind = job.kind, key = source.key, jobID = job.id
        var total: Int64 = 0
        var number = 1
        var current: (file: SpoolFile, filled: Int64, md5: Digest.Context)?
        let known = recorded
        let sent: [RecordedPart] = try await withThrowingTaskGroup(of: RecordedPart?.self) { group in
            var inFlight = 0
            var done: [RecordedPart] = []
            func take(_ part: RecordedPart?) {
                inFlight -= 1
                if let part { done.append(part) }
            }
            func open() async throws -> (file: SpoolFile, filled: Int64, md5: Digest.Context) {
                guard number <= PartPlan.maximumPartCount else { throw Failure(code: FailureCode.entityTooLarge) }
                try await spool.reserve(jobID: jobID, name: .part(number), bytes: partSize)
                guard let file = try spool.open(jobID: jobID, name: .part(number), create: true, truncate: true) else {
                    throw Failure(code: FailureCode.spoolFailed)
                }
                return (file, 0, Digest.Context(.md5))
            }
            /// Sends the part now in `current` (unless S3 holds its bytes already).
            func seal() async throws {
                guard let part = current else { return }
                current = nil
                let partNumber = number, size = part.filled, file = part.file
                let etag = "\"" + Digest.hex(part.md5.finish()) + "\""
                number += 1
                if let held = known[partNumber], held.size == size, MultipartETag.same(held.etag, etag) {
                    spool.remove(jobID: jobID, name: .part(partNumber))
                    done.append(held)
                    return
                }
                let uploadID = try await openUpload(job, options, lease, key: key, partSize: partSize, size: source.size,
                                                    etag: source.etag, upload: upload)
                while inFlight >= concurrency, let finished = try await group.next() { take(finished) }
                inFlight += 1
                group.addTask {
                    defer { spool.remove(jobID: jobID, name: .part(partNumber)) }
                    let held = try await memory.reserve(buffer)
                    defer { held.release() }
                    let partETag = try await clock.retrying(limit: retryLimit, backoff: backoff, random: random) {
                        try await objects.uploadPart(key: key, uploadID: uploadID, part: partNumber,
                                                     data: .file(file, offset: 0, length: size))
                    }
                    let recordedPart = RecordedPart(number: partNumber, size: size, etag: partETag)
                    try await store.recordPart(recordedPart, under: lease)
                    observer.partMoved(kind: kind, bytes: size)
                    return recordedPart
                }
            }
            while let chunk = try await body.next() {
                var rest = chunk
                while !rest.isEmpty {
                    var part: (file: SpoolFile, filled: Int64, md5: Digest.Context)
                    if let open = current { part = open } else { part = try await open() }
                    let take = Int(min(partSize - part.filled, Int64(rest.count)))
                    try rest.prefix(take).withUnsafeBytes { bytes in
                        try part.file.write(bytes, at: part.filled)
                        part.md5.update(bytes)
                    }
                    part.filled += Int64(take)
                    total += Int64(take)
                    rest = rest.dropFirst(take)
                    current = part
                    if part.filled == partSize { try await seal() }
                }
            }
            if let size = source.size, size != total { throw TransferError.sourceChanged }
            if let pinned = job.bytesTotal, job.partsTotal != nil, pinned != total { throw TransferError.sourceChanged }
            if upload.id == nil && number == 1 {
                return []  // the whole object fits one part: one PutObject below
            }
            try await seal()
            while let finished = try await group.next() { take(finished) }
            return done
        }
        if upload.id == nil && number == 1 {
            let file = try current?.file ?? emptyPart(spool, jobID)
            let filled = current?.filled ?? 0
            defer { spool.remove(jobID: jobID, name: .part(1)) }
            try await store.start(lease, uploadID: nil, partsTotal: 1, partSize: partSize, bytesTotal: total, sourceETag: source.etag)
            let etag = try await clock.retrying(limit: retryLimit, backoff: backoff, random: random) {
                try await objects.putObject(key: key, data: .file(file, offset: 0, length: filled),
                                            attributes: options.attributes)
            }
            try Task.checkCancellation()
            observer.partMoved(kind: kind, bytes: total)
            try await store.recordPart(RecordedPart(number: 1, size: total, etag: etag), under: lease)
            try await store.finish(lease, state: .completed, etag: etag, error: nil)
            observer.jobEnded(kind: kind, state: .completed)
            return .completed(etag: etag)
        }
        for part in sent { recorded[part.number] = part }
        guard let uploadID = upload.id else { throw Failure(code: "InternalError") }
        let parts = (1..<number).compactMap { recorded[$0] }
        guard parts.count == number - 1 else { throw Failure(code: "InternalError") }
        let etag = try await completeUpload(key: key, uploadID: uploadID, parts: parts, size: total)
        try Task.checkCancellation()
        cleanUp(job, after: .completed)
        try await store.finish(lease, state: .completed, etag: etag, error: nil)
        observer.jobEnded(kind: kind, state: .completed)
        return .completed(etag: etag)
    }

    /// An empty part file for an empty body.
    private func emptyPart(_ spool: any Spool, _ jobID: String) throws -> SpoolFile {
        guard let file = try spool.open(jobID: jobID, name: .part(1), create: true, truncate: true) else {
            throw Failure(code: FailureCode.spoolFailed)
        }
        return file
    }

    /// The job's multipart upload, created (and recorded with a fresh plan) the first time a
    /// part needs it.
    private func openUpload(_ job: Job, _ options: JobOptions, _ lease: Lease, key: String, partSize: Int64,
                            size: Int64?, etag: String?, upload: UploadHandle) async throws -> String {
        if let id = upload.id { return id }
        let created = try await objects.createMultipartUpload(key: key, attributes: options.attributes)
        upload.set(created)
        let parts = size.map { Int(($0 + partSize - 1) / partSize) } ?? 0
        try await store.start(lease, uploadID: created, partsTotal: parts, partSize: partSize, bytesTotal: size, sourceETag: etag)
        return created
    }
}
