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
    func stream(
        _ job: Job, _ options: JobOptions, _ lease: Lease, _ source: StreamSource, _ upload: MultipartUploadHandle,
        _ control: JobControl
    ) async throws -> Outcome {
        do {
            try checkPinned(job, size: source.size, etag: source.etag)
            let partSize = job.partsTotal != nil ? job.partSize : options.partSize ?? settings.partSize
            var recorded: [Int: RecordedPart] = [:]
            if let existing = upload.id {
                do {
                    let held = Dictionary(
                        try await objects.listParts(key: source.key, uploadID: existing).map { ($0.number, $0) },
                        uniquingKeysWith: { _, later in later })
                    for part in try await store.parts(of: job.id) where held[part.number]?.etag == part.etag && part.size <= partSize {
                        recorded[part.number] = part
                    }
                } catch let error as TransferError where error.code == .noSuchUpload {
                    upload.clear()
                }
            }
            if upload.id == nil { try await abortOrphans(job, key: source.key) }
            let retryLimit = options.retryLimit ?? settings.retryLimit
            var attempt = 1
            while true {
                do {
                    return try await streamOnce(
                        job, options, lease, source, partSize: partSize, upload: upload, recorded: &recorded,
                        control: control)
                } catch let error as TransferError where error.retryable && attempt <= retryLimit {
                    observer.partFailed(kind: job.kind, code: error.code)
                    try await clock.sleep(milliseconds: settings.backoff.delay(retry: attempt, unit: settings.random()))
                    attempt += 1
                }
            }
        } catch let failure as Failure {
            return try await giveUp(lease, job, failure.failure, upload: upload)
        } catch let error as TransferError {
            observer.partFailed(kind: job.kind, code: error.code)
            return try await giveUp(lease, job, JobFailure(error), upload: upload)
        } catch is ByteBudget.TooLarge {
            return try await fail(lease, job, JobFailure(.spoolTooSmall), upload: upload)
        } catch is SpoolError {
            return try await fail(lease, job, JobFailure(.spoolFailed), upload: upload)
        }
    }

    /// One read's progress: the part being filled and the parts sent or found already in S3.
    struct StreamPass {
        let source: StreamSource
        let partSize: Int64
        let concurrency: Int
        let retryLimit: Int
        /// Parts a previous run recorded (and S3 still holds).
        let known: [Int: RecordedPart]
        var total: Int64 = 0
        var number = 1
        var current: StreamPart?
        var inFlight = 0
        var done: [RecordedPart] = []
        /// Parts sent to S3 by this read (not found there already).
        var sent = 0
        /// Sent parts' files, for the next parts to be written into.
        let spares = SpareParts()
    }

    /// The part being filled: its file, the bytes in it, their CRC-32C (sent with the part, so
    /// its bytes are never read back for it) and, only where a previous run recorded this part,
    /// their MD5 (to tell whether S3 holds these bytes already).
    struct StreamPart {
        let file: SpoolFile
        var filled: Int64 = 0
        var crc: UInt32 = 0
        let md5: Digest.Context?
    }

    typealias StreamTasks = ThrowingTaskGroup<RecordedPart, any Error>

    /// One read of the whole source; parts S3 already holds (from `recorded`) are not sent again.
    /// Asked to yield, the read stops once it has sent a part of its own (so every run moves the
    /// job forward), the parts in flight are recorded and the job goes back to the queue; the
    /// next run reads the source again and skips what S3 holds.
    private func streamOnce(
        _ job: Job, _ options: JobOptions, _ lease: Lease, _ source: StreamSource, partSize: Int64,
        upload: MultipartUploadHandle, recorded: inout [Int: RecordedPart], control: JobControl
    ) async throws -> Outcome {
        guard let fetcher else { throw Failure(code: FailureCode.invalidJob) }
        let streamBuffer = try await settings.memory.reserve(settings.transferBufferBytes, owner: job.owner)
        defer { streamBuffer.release() }
        let body = try await fetcher.stream(source.url, limit: settings.maxObjectSize)
        var pass = StreamPass(
            source: source, partSize: partSize,
            concurrency: min(max(options.concurrency ?? settings.concurrency, 1), settings.maxConcurrency),
            retryLimit: options.retryLimit ?? settings.retryLimit, known: recorded)
        // Runs once every send has ended (the group below waits for them, throwing or not).
        defer { if let spool { pass.spares.drop(jobID: job.id, on: spool) } }
        let yielded = try await withThrowingTaskGroup(of: RecordedPart.self) { group in
            while let chunk = try await body.next() {
                // Bytes read so far show as the job's progress, inside the part being filled.
                control.meter.add(Int64(chunk.count))
                let yielding: Bool
                do {
                    try await write(chunk, &pass, &group, job, options, lease, upload, pass.sent > 0 ? control : nil)
                    yielding = pass.sent > 0 && control.yieldRequested && control.yieldNow()
                } catch is YieldedWhileWaiting {
                    yielding = true  // the rest of the chunk is dropped with the part it was for
                }
                if yielding {
                    while let finished = try await group.next() { pass.inFlight -= 1; pass.done.append(finished) }
                    return true
                }
                // Written (and summed): its memory may carry a later chunk.
                body.giveBack(consume chunk)
            }
            // No part comes after: a spare kept now would only wait for the end.
            if let spool { pass.spares.drop(jobID: job.id, on: spool) }
            if let size = source.size, size != pass.total { throw TransferError.sourceChanged }
            if let pinned = job.bytesTotal, job.partsTotal != nil, pinned != pass.total { throw TransferError.sourceChanged }
            // The whole object fits one part: one PutObject below.
            guard upload.id != nil || pass.number > 1 else { return false }
            try await seal(&pass, &group, job, options, lease, upload)
            while let finished = try await group.next() { pass.inFlight -= 1; pass.done.append(finished) }
            return false
        }
        if yielded {
            if pass.current != nil { spool?.remove(jobID: job.id, name: .part(pass.number)) }
            try await store.release(lease)
            return .stopped(.queued)
        }
        if upload.id == nil && pass.number == 1 { return try await putWhole(pass, job, options, lease, control) }
        for part in pass.done { recorded[part.number] = part }
        guard let uploadID = upload.id else { throw Failure(code: .internalError) }
        let parts = (1..<pass.number).compactMap { recorded[$0] }
        guard parts.count == pass.number - 1 else { throw Failure(code: .internalError) }
        try await control.completion.begin(store, lease)
        let etag = try await completeUpload(
            key: source.key, uploadID: uploadID, parts: parts, size: pass.total, condition: options.writeCondition)
        try Task.checkCancellation()
        cleanUp(job, after: .completed)
        // The parts' CRC-32Cs (the bytes passed through here) make the object's.
        try await store.finish(lease, state: .completed, etag: etag, error: nil, checksum: ObjectChecksum.combining(parts))
        observer.jobEnded(kind: job.kind, state: .completed)
        return .completed(etag: etag)
    }

    /// A chunk of the body into the part being filled; every full part is sealed. With a
    /// `control`, a wait for room for the next part gives up when a yield is requested.
    private func write(
        _ chunk: ArraySlice<UInt8>, _ pass: inout StreamPass, _ group: inout StreamTasks, _ job: Job,
        _ options: JobOptions, _ lease: Lease, _ upload: MultipartUploadHandle, _ control: JobControl?
    ) async throws {
        var rest = chunk
        while !rest.isEmpty {
            var part: StreamPart
            if let open = pass.current {
                part = open
            } else {
                part = try await openPart(pass, job.id, job.owner, control)
            }
            let take = Int(min(pass.partSize - part.filled, Int64(rest.count)))
            // The part is full with these bytes: a send that finishes from now on leaves its
            // file for the next part (the source is faster than S3). A slow source's parts
            // finish sending while the next fills, and leave no file behind.
            if part.filled + Int64(take) == pass.partSize { pass.spares.want() }
            try rest.prefix(take).withUnsafeBytes { bytes in
                try part.file.write(bytes, at: part.filled)
                part.crc = Digest.crc32c(bytes, continuing: part.crc)
                part.md5?.update(bytes)
            }
            part.filled += Int64(take)
            pass.total += Int64(take)
            rest = rest.dropFirst(take)
            pass.current = part
            if part.filled == pass.partSize { try await seal(&pass, &group, job, options, lease, upload) }
        }
    }

    /// The next part's file: a sent part's file kept for it (its reservation, a part's, going
    /// with it), else a new one reserved on the spool first (the stream waits for room).
    private func openPart(
        _ pass: StreamPass, _ jobID: String, _ owner: String, _ control: JobControl?
    ) async throws -> StreamPart {
        guard let spool else { throw Failure(code: FailureCode.invalidJob) }
        let number = pass.number, partSize = pass.partSize
        guard number <= PartPlan.maximumPartCount else { throw Failure(code: FailureCode.entityTooLarge) }
        let md5 = pass.known[number] != nil ? Digest.Context(.md5) : nil
        if let spare = try pass.spares.take(as: .part(number), jobID: jobID, on: spool) { return StreamPart(file: spare, md5: md5) }
        if let control {
            try await control.waitingForRoom { try await spool.reserve(jobID: jobID, name: .part(number), bytes: partSize, owner: owner) }
        } else {
            try await spool.reserve(jobID: jobID, name: .part(number), bytes: partSize, owner: owner)
        }
        guard let file = try spool.open(jobID: jobID, name: .part(number), create: true, truncate: true) else {
            throw Failure(code: FailureCode.spoolFailed)
        }
        return StreamPart(file: file, md5: md5)
    }

    /// Sends the part being filled (unless S3 holds its bytes already), at most `concurrency`
    /// in flight: the stream waits for a slot.
    private func seal(
        _ pass: inout StreamPass, _ group: inout StreamTasks, _ job: Job, _ options: JobOptions, _ lease: Lease,
        _ upload: MultipartUploadHandle
    ) async throws {
        guard let part = pass.current else { return }
        pass.current = nil
        let number = pass.number, size = part.filled, file = part.file, crc = part.crc, jobID = job.id
        pass.number += 1
        if let held = pass.known[number], held.size == size, let md5 = part.md5,
            MultipartETag.same(held.etag, "\"" + Digest.hex(md5.finish()) + "\"")
        {
            spool?.remove(jobID: jobID, name: .part(number))
            pass.done.append(held)
            return
        }
        // A file written over may hold a longer part's bytes past this one's.
        if file.size > size { try file.truncate(to: size) }
        let uploadID = try await openUpload(
            job, options, lease, key: pass.source.key, partSize: pass.partSize, size: pass.source.size,
            etag: pass.source.etag, upload: upload)
        while pass.inFlight >= pass.concurrency, let finished = try await group.next() {
            pass.inFlight -= 1
            pass.done.append(finished)
        }
        pass.inFlight += 1
        pass.sent += 1
        let key = pass.source.key, retryLimit = pass.retryLimit, checksum = upload.checksum, spares = pass.spares
        group.addTask {
            let settings = self.settings, clock = self.clock, objects = self.objects
            let recorded: RecordedPart
            do {
                recorded = try await settings.transferring(for: job.owner) {
                    try await clock.retrying(limit: retryLimit, backoff: settings.backoff, random: settings.random) {
                        try await objects.uploadPart(
                            key: key, uploadID: uploadID, part: number, data: .file(file, offset: 0, length: size, crc32c: crc),
                            checksum: checksum)
                    }
                }
            } catch {
                // A part that did not get there takes its file with it (a broken connection may
                // still hold its pages).
                self.spool?.remove(jobID: jobID, name: .part(number))
                throw error
            }
            // S3 holds every byte: the file is a spare for the next part, or goes.
            if !spares.keep(number, file) { self.spool?.remove(jobID: jobID, name: .part(number)) }
            try await self.store.recordPart(recorded, under: lease)
            self.observer.partMoved(kind: job.kind, bytes: size)
            return recorded
        }
    }

    /// A body of one part or less: one PutObject from its file.
    private func putWhole(
        _ pass: StreamPass, _ job: Job, _ options: JobOptions, _ lease: Lease,
        _ control: JobControl
    ) async throws -> Outcome {
        guard let spool else { throw Failure(code: FailureCode.invalidJob) }
        let file = try pass.current?.file ?? emptyPart(spool, job.id)
        let filled = pass.current?.filled ?? 0, crc = pass.current?.crc ?? 0, key = pass.source.key, objects = self.objects
        defer { spool.remove(jobID: job.id, name: .part(1)) }
        try await store.start(
            lease, uploadID: nil, partsTotal: 1, partSize: pass.partSize, bytesTotal: pass.total,
            sourceETag: pass.source.etag)
        let settings = self.settings, clock = self.clock
        let data = PartData.file(file, offset: 0, length: filled, crc32c: crc)
        try await control.completion.begin(store, lease)
        let etag = try await settings.transferring(for: job.owner) {
            try await clock.retrying(limit: pass.retryLimit, backoff: settings.backoff, random: settings.random) {
                try await objects.putObject(
                    key: key, data: data, attributes: options.attributes,
                    condition: options.writeCondition)
            }
        }
        try Task.checkCancellation()
        observer.partMoved(kind: job.kind, bytes: pass.total)
        let part = RecordedPart(number: 1, size: pass.total, etag: etag, checksum: Digest.crc32cBase64(crc))
        try await store.recordPart(part, under: lease)
        try await store.finish(lease, state: .completed, etag: etag, error: nil, checksum: ObjectChecksum.combining([part]))
        observer.jobEnded(kind: job.kind, state: .completed)
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
    private func openUpload(
        _ job: Job, _ options: JobOptions, _ lease: Lease, key: String, partSize: Int64,
        size: Int64?, etag: String?, upload: MultipartUploadHandle
    ) async throws -> String {
        if let id = upload.id { return id }
        let checksum = settings.partChecksum
        let created = try await objects.createMultipartUpload(key: key, attributes: options.attributes, checksum: checksum)
        upload.set(created, checksum: checksum)
        let parts = size.map { Int(($0 + partSize - 1) / partSize) } ?? 0
        try await store.start(
            lease, uploadID: created, partChecksum: checksum, partsTotal: parts, partSize: partSize, bytesTotal: size,
            sourceETag: etag)
        return created
    }
}
