import Crypto

/// One request's bytes on their way into an upload job (see `UploadReceiver`): the tail file on
/// the spool, the parts cut from it and sent to S3, and what is saved when the body ends.
struct UploadRequest: Sendable {
    typealias Outcome = UploadReceiver.Outcome

    let receiver: UploadReceiver
    let claim: UploadClaim
    let key: String
    let body: any ByteSource
    let checksum: UploadReceiver.Checksum?
    /// Where the bytes received so far are shown.
    let meter: ProgressMeter
    /// Set once the request begins to write the object (its lifetime's deadline then spares it).
    let completion: CompletionMark

    var job: Job { claim.job }
    var lease: Lease { claim.lease }
    var spool: any Spool { receiver.spool }
    var settings: EngineSettings { receiver.settings }

    struct PartResult: Sendable {
        /// The parts this one's write recorded (itself and those that waited for it; none when
        /// a later part records it), or, when recording waits for the checksum, itself.
        let parts: [RecordedPart]
        let error: TransferError?
    }

    enum Ending {
        case clean, broken, tooLarge, noRoom
    }

    /// What the request has done so far.
    struct Progress {
        /// The parts recorded, in order.
        var parts: [RecordedPart]
        /// The tail's pieces the store lists (emptied once a part is recorded).
        var segments: [TailSegment]
        /// Object bytes the tail file holds, after the recorded and sent parts.
        var tailSize: Int64
        var tailFile: SpoolFile?
        /// The tail's CRC-32C, summed as its bytes were written, so a part or object made of it
        /// is sent with its checksum and never read back for one; nil for a tail an earlier
        /// request left (read back when it is sent).
        var tailCRC: UInt32?
        var nextPart: Int
        var uploadID: String?
        /// How `uploadID`'s parts are checked (nil: `Content-MD5`, an upload from before).
        var partChecksum: PartChecksum?
        /// Object offset of the first byte not yet received.
        var received: Int64
        /// Parts sent but held back until the checksum is checked.
        var unrecorded: [RecordedPart] = []
        var failure: JobFailure?
        /// The request's bytes' digest, when it carries a checksum.
        var digest: [UInt8]?
    }

    func run() async throws -> Outcome {
        let parts = try await receiver.store.parts(of: job.id)
        let partBytes = parts.reduce(Int64(0)) { $0 + $1.size }
        let tailBytes = claim.tail.reduce(Int64(0)) { $0 + $1.size }
        let committed = partBytes + tailBytes
        // This request's read buffer and hashing come out of the memory budget.
        let buffer = settings.requestBufferBytes, memory = settings.memory
        let owner = job.owner
        guard let held = try await receiver.room({ try await memory.reserve(buffer, owner: owner) }) else {
            try await release()
            return .noRoom(committed: committed)
        }
        defer { held.release() }
        var progress = Progress(
            parts: parts, segments: claim.tail, tailSize: tailBytes, tailFile: nil, tailCRC: tailBytes == 0 ? 0 : nil,
            nextPart: parts.count + 1, uploadID: job.uploadID, partChecksum: job.partChecksum,
            received: committed)
        guard try await openTail(&progress, partBytes: partBytes) else {
            try await release()
            return .noRoom(committed: committed)
        }
        let ending = try await stream(&progress)

        if let failure = progress.failure {
            // S3 away past the retries: the upload waits at what is recorded (the receiver
            // answers 503). A part S3 refused for good fails the job, as for every job type, and
            // its multipart upload is aborted so nothing is left behind.
            if failure.passesWithTime { throw StorageUnavailable() }
            return try await fail(&progress, failure)
        }
        if let checksum {
            guard let digest = progress.digest, Digest.constantTimeEqual(digest, checksum.expected) else {
                // Nothing of the request counts: the store still lists the tail it began with.
                receiver.forgetTail(job.id)
                spool.removeAll(jobID: job.id, keeping: [])
                try await release()
                return .checksumMismatch(committed: committed)
            }
            for part in progress.unrecorded { try await record(part, &progress) }
        }
        let declared = job.bytesTotal
        if ending == .clean && (declared == nil || progress.received == declared) {
            return try await finish(&progress)
        }
        try await saveTail(&progress)
        // Between requests the tail holds only its own bytes of the spool, not a part's worth
        // (a sent part's file it was written into holds that part's bytes past its own).
        try progress.tailFile?.truncate(to: progress.tailSize)
        spool.shrink(jobID: job.id, name: .tail, to: progress.tailSize)
        try await release()
        let now = progress.received
        switch ending {
        case .tooLarge: return .tooLarge(declared: declared ?? now, committed: now)
        case .noRoom: return .noRoom(committed: now)
        case .clean, .broken: return .waiting(committed: now)
        }
    }

    private func release() async throws {
        try await receiver.store.releaseUpload(lease)
    }

    /// The tail file on this spool: the one this instance left, if the store still lists the
    /// pieces it was saved as, else rebuilt from the staged pieces.
    private func openTail(_ progress: inout Progress, partBytes: Int64) async throws -> Bool {
        // What the tail holds, and a chunk more: the reservation grows as bytes arrive.
        let room = min(job.partSize, (job.bytesTotal ?? Int64.max) - partBytes)
        let jobID = job.id, owner = job.owner, spool = self.spool
        let bytes = max(min(room, progress.tailSize + settings.spoolChunkBytes), progress.tailSize)
        guard try await receiver.room({ try await spool.reserve(jobID: jobID, name: .tail, bytes: bytes, owner: owner) }) != nil else {
            return false
        }
        if receiver.localTail(job.id) == progress.segments,
            let file = try spool.open(jobID: job.id, name: .tail, create: false, truncate: false), file.size >= progress.tailSize
        {
            try file.truncate(to: progress.tailSize)
            progress.tailFile = file
            return true
        }
        receiver.forgetTail(job.id)
        guard let file = try spool.open(jobID: job.id, name: .tail, create: true, truncate: true) else { return false }
        for segment in progress.segments where segment.size > 0 {
            try await settings.transferring(for: job.owner) {
                try await receiver.objects.read(
                    key: segment.key, range: 0...(segment.size - 1), ifMatch: nil, into: file,
                    at: segment.offset - partBytes)
            }
        }
        guard file.size == progress.tailSize else { throw TransferError(code: .spoolFailed, retryable: false) }
        progress.tailFile = file
        return true
    }

    /// The job's multipart upload, created (and recorded) the first time a part needs it.
    func openUpload(_ progress: inout Progress) async throws -> String {
        if let id = progress.uploadID { return id }
        let options = job.options
        let checksum = settings.partChecksum
        if job.crashes > 0 {
            // A request before this one died with its instance, perhaps between creating an
            // upload and recording its id: such an upload belongs to no one (at least a lease old
            // by now, where one another writer of this key has just begun is younger).
            let inUse = try await receiver.store.uploadIDsInUse(key: key)
            let age = Double(settings.leaseMilliseconds) / 2000
            for orphan in try await receiver.objects.openUploads(key: key, olderThan: age) where !inUse.contains(orphan) {
                try? await receiver.objects.abortMultipartUpload(key: key, uploadID: orphan)
            }
        }
        let created = try await receiver.objects.createMultipartUpload(key: key, attributes: options.attributes, checksum: checksum)
        let parts = job.bytesTotal.map { Int(($0 + job.partSize - 1) / job.partSize) } ?? 0
        try await receiver.store.start(
            lease, uploadID: created, partChecksum: checksum, partsTotal: parts, partSize: job.partSize,
            bytesTotal: job.bytesTotal, sourceETag: nil)
        progress.uploadID = created
        progress.partChecksum = checksum
        return created
    }

    private func record(_ part: RecordedPart, _ progress: inout Progress) async throws {
        let replaced = try await receiver.store.recordUploadPart(part, under: lease)
        receiver.observer.partMoved(kind: .upload, bytes: part.size)
        await receiver.deleteStaged(replaced)
        progress.parts.append(part)
        progress.segments = []
    }

    /// Stages the tail bytes the store does not list yet, so any instance continues from them;
    /// many small pieces are merged into one.
    private func saveTail(_ progress: inout Progress) async throws {
        let covered = progress.segments.reduce(Int64(0)) { $0 + $1.size }
        guard let file = progress.tailFile, progress.tailSize > covered else {
            receiver.rememberTail(job.id, progress.segments)
            return
        }
        let start = progress.received - progress.tailSize
        var segments = progress.segments
        var from = covered
        if segments.count >= settings.maxTailSegments {
            segments = []
            from = 0
        }
        if progress.tailSize > from {
            let segmentKey = "\(settings.stagingPrefix)\(job.id)/\(start + from)-\(Digest.hex(Digest.randomBytes(4)))"
            let length = progress.tailSize - from, offset = from, crc = progress.tailCRC
            let objects = receiver.objects, settings = self.settings
            _ = try await settings.transferring(for: job.owner) {
                try await receiver.clock.retrying(limit: settings.retryLimit, backoff: settings.backoff, random: settings.random) {
                    try await objects.putObject(
                        key: segmentKey, data: .file(file, offset: offset, length: length, crc32c: offset == 0 ? crc : nil),
                        attributes: ObjectAttributesSpec(contentType: "application/octet-stream"))
                }
            }
            segments.append(TailSegment(offset: start + from, size: length, key: segmentKey))
        }
        let dropped = try await receiver.store.saveUploadTail(segments, under: lease)
        await receiver.deleteStaged(dropped)
        progress.segments = segments
        receiver.rememberTail(job.id, segments)
    }

    /// The last bytes: one PutObject for a small object, else the last part and completion.
    private func finish(_ progress: inout Progress) async throws -> Outcome {
        let options = job.options
        let retryLimit = options.retryLimit ?? settings.retryLimit
        let objects = receiver.objects, key = self.key
        let tailSize = progress.tailSize, tailCRC = progress.tailCRC
        do {
            let tail = progress.tailFile
            let etag: String
            if let made = try await madeBefore(progress) {
                // The object was written by a request whose instance died before finishing the
                // job: it is there, whole. Writing again would replace it with what this request
                // holds (an empty PATCH at the full offset holds nothing).
                etag = made
            } else if let uploadID = progress.uploadID {
                if tailSize > 0 || progress.parts.isEmpty {
                    guard let file = tail else { throw TransferError(code: .spoolFailed, retryable: false) }
                    let number = progress.nextPart
                    let checksum = progress.partChecksum ?? .md5
                    let sent = try await settings.transferring(for: job.owner) {
                        try await receiver.clock.retrying(limit: retryLimit, backoff: settings.backoff, random: settings.random) {
                            try await objects.uploadPart(
                                key: key, uploadID: uploadID, part: number,
                                data: .file(file, offset: 0, length: tailSize, crc32c: tailCRC), checksum: checksum)
                        }
                    }
                    try await record(sent, &progress)
                }
                try await completion.begin(receiver.store, lease)
                do {
                    etag = try await objects.completeMultipartUpload(
                        key: key, uploadID: uploadID, parts: progress.parts, condition: options.writeCondition)
                } catch let error as TransferError where error.code == .noSuchUpload {
                    // Completed by a request whose answer (or instance) was lost: the object says so.
                    guard let made = try await completedEarlier(progress) else { throw error }
                    etag = made
                }
                if let expected = MultipartETag.expected(for: progress.parts.map(\.etag)), !MultipartETag.same(expected, etag) {
                    return try await fail(&progress, JobFailure(.etagMismatch))
                }
                guard try await objects.size(of: key).size == progress.received else {
                    progress.uploadID = nil
                    return try await fail(&progress, JobFailure(.sizeMismatch))
                }
            } else {
                guard let file = tail else { throw TransferError(code: .spoolFailed, retryable: false) }
                // The object's CRC-32C, summed as the tail was written (read back for a tail an
                // earlier request left): recorded, and sent for S3 to check against the bytes.
                let crc = tailCRC ?? (tailSize > 0 ? file.crc32c(0...(tailSize - 1)) : 0)
                guard let crc else { throw TransferError(code: .spoolFailed, retryable: false) }
                try await completion.begin(receiver.store, lease)
                etag = try await settings.transferring(for: job.owner) {
                    try await receiver.clock.retrying(limit: retryLimit, backoff: settings.backoff, random: settings.random) {
                        try await objects.putObject(
                            key: key, data: .file(file, offset: 0, length: tailSize, crc32c: crc), attributes: options.attributes,
                            condition: options.writeCondition)
                    }
                }
                try await record(
                    RecordedPart(number: 1, size: tailSize, etag: etag, checksum: Digest.crc32cBase64(crc)), &progress)
            }
            // Every part's CRC-32C combined: the whole object's, with no second read of it.
            let checksum = ObjectChecksum.combining(progress.parts)
            try await receiver.store.finish(lease, state: .completed, etag: etag, error: nil, checksum: checksum)
            receiver.observer.jobEnded(kind: .upload, state: .completed)
            receiver.forgetTail(job.id)
            spool.removeAll(jobID: job.id, keeping: [])
            return .completed(etag: etag, size: progress.received)
        } catch let error as TransferError {
            receiver.observer.partFailed(kind: .upload, code: error.code)
            // S3 away past the retries: the upload waits (the receiver answers 503).
            if error.retryable { throw error }
            return try await fail(&progress, JobFailure(error))
        }
    }

    /// The ETag of the object when a request before this one already wrote it: a one-part
    /// object's PutObject is recorded as its part only once S3 holds it, so a recorded part with
    /// no multipart upload and no tail is the object, there already.
    private func madeBefore(_ progress: Progress) async throws -> String? {
        guard progress.uploadID == nil, progress.tailSize == 0, progress.parts.count == 1, let part = progress.parts.first,
            part.size == progress.received
        else { return nil }
        let found = try await receiver.objects.size(of: key)
        guard found.size == part.size, found.etag == part.etag else { return nil }
        return found.etag
    }

    /// The object's ETag when the multipart upload was completed before (S3 no longer has it)
    /// and the object is the one the recorded parts make.
    private func completedEarlier(_ progress: Progress) async throws -> String? {
        guard progress.tailSize == 0, let found = try? await receiver.objects.size(of: key), found.size == progress.received,
            let expected = MultipartETag.expected(for: progress.parts.map(\.etag)), MultipartETag.same(expected, found.etag)
        else { return nil }
        return found.etag
    }

    /// The job fails: S3 refused a part for good, or the object came out wrong.
    private func fail(_ progress: inout Progress, _ failure: JobFailure) async throws -> Outcome {
        if let uploadID = progress.uploadID { try? await receiver.objects.abortMultipartUpload(key: key, uploadID: uploadID) }
        try await receiver.store.finish(lease, state: .failed, etag: nil, error: failure)
        receiver.observer.jobEnded(kind: .upload, state: .failed)
        await receiver.deleteStaged(progress.segments)
        receiver.forgetTail(job.id)
        spool.removeAll(jobID: job.id, keeping: [])
        return .failed(code: failure.code, committed: 0)
    }
}
