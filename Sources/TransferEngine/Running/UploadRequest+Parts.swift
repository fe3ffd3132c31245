import Crypto

/// Streaming a request's body into parts: the tail file fills, each whole part goes to S3 from
/// its file (at most `concurrency` in flight, recorded in order), and a new tail is opened once
/// the spool has room for it.
extension UploadRequest {
    typealias Parts = ThrowingTaskGroup<PartResult, any Error>

    /// What streaming needs, fixed for the request.
    struct Streaming: Sendable {
        let partSize: Int64
        let declared: Int64?
        let concurrency: Int
        let retryLimit: Int
        /// A checksummed request records nothing until its checksum matches.
        let deferRecording: Bool
        /// A part is recorded once it and every part before it are in S3, not when the body's
        /// reader next looks: a client that pauses mid-body has its finished parts counted.
        let turns: InOrderTurns
        /// Parts whose turns come close together are recorded in one write.
        let batch: PartBatch
        /// `bandwidthLimit`: the body is read no faster than this.
        let pace: Pace?
        /// Sent parts' files, for the next tails to be written into.
        let spares = SpareParts()
    }

    /// Reads the body into the tail file, sending every whole part as it forms.
    func stream(_ progress: inout Progress) async throws -> Ending {
        let options = job.options
        let streaming = Streaming(
            partSize: job.partSize, declared: job.bytesTotal,
            concurrency: min(max(options.concurrency ?? settings.concurrency, 1), settings.maxConcurrency),
            retryLimit: options.retryLimit ?? settings.retryLimit, deferRecording: checksum != nil,
            turns: InOrderTurns(first: progress.nextPart),
            batch: PartBatch(interval: settings.partSaveMilliseconds),
            pace: Pace(bytesPerSecond: options.bandwidthLimit, clock: receiver.clock))
        let hasher = checksum.map { Digest.Context($0.algorithm) }
        var ending = Ending.clean
        // Runs once every send has ended (the group below waits for them, throwing or not).
        defer { streaming.spares.drop(jobID: job.id, on: spool) }
        try await withThrowingTaskGroup(of: PartResult.self) { group in
            var inFlight = 0
            ending = try await readBody(&group, &inFlight, &progress, streaming, hasher)
            do {
                while let result = try await group.next() { settle(result, &inFlight, &progress, streaming) }
            } catch {
                streaming.turns.stop()
                throw error
            }
        }
        if streaming.deferRecording && progress.failure == nil, let hasher {
            progress.digest = hasher.finish()
        }
        progress.parts.sort { $0.number < $1.number }
        progress.unrecorded.sort { $0.number < $1.number }
        return ending
    }

    /// Reads until the body ends, breaks, goes past the declared size, or finds no room.
    private func readBody(
        _ group: inout Parts, _ inFlight: inout Int, _ progress: inout Progress, _ s: Streaming,
        _ hasher: Digest.Context?
    ) async throws -> Ending {
        let first = progress.received
        while progress.failure == nil {
            // Read no faster than the limit: the client's sending slows to it (TCP backpressure).
            if let pace = s.pace { try await receiver.clock.sleep(until: pace.time(forBytes: progress.received - first)) }
            let chunk: ArraySlice<UInt8>?
            do {
                chunk = try await body.next()
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                return .broken
            }
            guard var rest = chunk else { return .clean }
            if let declared = s.declared, progress.received + Int64(rest.count) > declared { return .tooLarge }
            while !rest.isEmpty {
                // No room for the rest: what was written so far is kept; the client sends the
                // rest again after a moment.
                guard let file = progress.tailFile else { return .noRoom }
                let take = Int(min(s.partSize - progress.tailSize, Int64(rest.count)))
                // The tail's reservation grows a chunk at a time as the bytes arrive.
                // A part that finishes sending from now on leaves its file for the next tail.
                if progress.tailSize + Int64(take) == s.partSize { s.spares.want() }
                guard try await reserveRoom(for: progress.tailSize + Int64(take), s) else { return .noRoom }
                try rest.prefix(take).withUnsafeBytes { bytes in
                    try file.write(bytes, at: progress.tailSize)
                    hasher?.update(bytes)
                    progress.tailCRC = progress.tailCRC.map { Digest.crc32c(bytes, continuing: $0) }
                }
                progress.tailSize += Int64(take)
                progress.received += Int64(take)
                meter.set(progress.received)
                rest = rest.dropFirst(take)
                // A whole object of exactly one part is left for one PutObject at the end.
                let wholeObjectIsThisPart =
                    progress.uploadID == nil && progress.nextPart == 1
                    && s.declared == progress.received && rest.isEmpty
                if progress.tailSize == s.partSize && !wholeObjectIsThisPart {
                    do {
                        if try await !launch(&group, &inFlight, &progress, s) { progress.tailFile = nil }
                    } catch let error as TransferError {
                        progress.failure = JobFailure(error)
                        return .clean
                    }
                }
            }
        }
        return .clean
    }

    /// The full tail becomes the next part's file and goes to S3; a new tail is opened once the
    /// spool has room for it (false: no room).
    private func launch(_ group: inout Parts, _ inFlight: inout Int, _ progress: inout Progress, _ s: Streaming) async throws -> Bool {
        guard let file = progress.tailFile else { return false }
        let uploadID = try await openUpload(&progress), checksum = progress.partChecksum ?? .md5
        while inFlight >= s.concurrency, let result = try await group.next() { settle(result, &inFlight, &progress, s) }
        let number = progress.nextPart, size = progress.tailSize, crc = progress.tailCRC, jobID = job.id
        try spool.rename(jobID: jobID, from: .tail, to: .part(number))
        // The file named `.tail` no longer holds the tail the store lists: a request that dies
        // before it saves its own leaves the next to rebuild it from the staged pieces.
        receiver.forgetTail(jobID)
        progress.nextPart += 1
        progress.tailFile = nil
        progress.tailSize = 0
        progress.tailCRC = 0
        inFlight += 1
        s.batch.launched()
        let data = PartData.file(file, offset: 0, length: size, crc32c: crc)
        group.addTask { try await self.send(part: number, file: file, data: data, uploadID: uploadID, checksum: checksum, s) }
        // A sent part's file takes the next bytes, its reservation (a whole part's) with it.
        if let spare = try s.spares.take(as: .tail, jobID: jobID, on: spool) {
            // Never more than the rest of a declared upload.
            spool.shrink(jobID: jobID, name: .tail, to: min(s.partSize, (s.declared ?? Int64.max) - progress.received))
            progress.tailFile = spare
            return true
        }
        // Else a new file, with its first chunk of room on the spool, before any of its bytes are read.
        let room = min(s.partSize, (s.declared ?? Int64.max) - progress.received, settings.spoolChunkBytes)
        guard try await holdRoom(forTail: room, s),
            let next = try spool.open(jobID: jobID, name: .tail, create: true, truncate: true)
        else { return false }
        progress.tailFile = next
        return true
    }

    /// Makes the tail's reservation cover `bytes` (up to a chunk beyond, never past the part),
    /// waiting for room as long as a request may; false when there is none.
    private func reserveRoom(for bytes: Int64, _ s: Streaming) async throws -> Bool {
        guard spool.reserved(jobID: job.id, name: .tail) < bytes else { return true }
        return try await holdRoom(forTail: min(s.partSize, bytes + settings.spoolChunkBytes), s)
    }

    /// Makes the tail's reservation `bytes`: at once when that fits (no timer to set), else
    /// waiting as long as a request may, with no spare file kept (its room may be the room
    /// waited for); false when there is none.
    private func holdRoom(forTail bytes: Int64, _ s: Streaming) async throws -> Bool {
        let jobID = job.id, owner = job.owner, spool = self.spool
        if spool.growIfItFits(jobID: jobID, name: .tail, to: bytes, owner: owner) { return true }
        s.spares.drop(jobID: jobID, on: spool)
        return try await receiver.room({ try await spool.grow(jobID: jobID, name: .tail, to: bytes, owner: owner) }) != nil
    }

    /// One part to S3 from its file (with the CRC-32C its bytes were summed to as they arrived,
    /// when known), then recorded in its turn (unless recording waits for the checksum). A part
    /// S3 refuses for good stops every later part from counting. Once S3 holds the part its file
    /// is a spare for the next tail; a part that did not get there takes its file with it (a
    /// broken connection may still hold its pages).
    private func send(
        part number: Int, file: SpoolFile, data: PartData, uploadID: String, checksum: PartChecksum, _ s: Streaming
    ) async throws -> PartResult {
        let jobID = job.id, key = self.key, objects = receiver.objects, settings = self.settings
        let part: RecordedPart
        do {
            let clock = receiver.clock
            part = try await settings.transferring(for: job.owner) {
                try await clock.retrying(limit: s.retryLimit, backoff: settings.backoff, random: settings.random) {
                    try await objects.uploadPart(key: key, uploadID: uploadID, part: number, data: data, checksum: checksum)
                }
            }
        } catch let error as TransferError {
            spool.remove(jobID: jobID, name: .part(number))
            s.batch.ended()
            s.turns.stop()  // the job fails: nothing after this part counts
            return PartResult(parts: [], error: error)
        } catch {
            spool.remove(jobID: jobID, name: .part(number))
            s.batch.ended()
            s.turns.stop()
            throw error
        }
        if part.size > SpareParts.largestPart || !s.spares.keep(number, file) { spool.remove(jobID: jobID, name: .part(number)) }
        guard !s.deferRecording, await s.turns.wait(for: number) else {
            s.batch.ended()
            return PartResult(parts: s.deferRecording ? [part] : [], error: nil)
        }
        let due = s.batch.turn(of: part, now: receiver.clock.now())
        do {
            if !due.isEmpty {
                let replaced = try await receiver.store.recordUploadParts(due, under: lease)
                await receiver.deleteStaged(replaced)
            }
            receiver.observer.partMoved(kind: .upload, bytes: data.count)
        } catch {
            s.turns.stop()  // committed bytes stay a prefix: no later part may be recorded
            throw error
        }
        s.turns.recorded(number)
        return PartResult(parts: due, error: nil)
    }

    private func settle(_ result: PartResult, _ inFlight: inout Int, _ progress: inout Progress, _ s: Streaming) {
        inFlight -= 1
        if !result.parts.isEmpty {
            if s.deferRecording { progress.unrecorded += result.parts } else { progress.parts += result.parts }
            progress.segments = []
        } else if let error = result.error {
            receiver.observer.partFailed(kind: .upload, code: error.code)
            progress.failure = progress.failure ?? JobFailure(error)
        }
    }
}
