import Foundation

extension JobRunner {
    /// Sizes the job's source and says how its parts move, by type. A wait for spool room
    /// gives the slot back when `control` asks for it (`YieldedWhileWaiting`).
    func prepare(_ job: Job, _ options: JobOptions, _ control: JobControl) async throws -> Preparation {
        switch job.kind {
        case .copy: return .parts(try await copyWork(job, options))
        case .import: return try await importWork(job, options, control)
        // A download is pinned and completed when it is made (the API streams it from S3); an
        // upload takes its bytes from requests. Neither is the worker's.
        case .download, .upload: throw Failure(code: .invalidJob)
        }
    }

    /// The part plan for `size` bytes: the part size the job began with once it has begun (a
    /// restart under another `GATEWAY_PART_SIZE` must not re-cut recorded parts), else the
    /// job's option or the default.
    func plan(size: Int64, _ options: JobOptions, _ job: Job) throws -> PartPlan {
        let requested = job.partsTotal != nil ? job.partSize : options.partSize ?? settings.partSize
        do {
            return try PartPlan(objectSize: size, requestedPartSize: requested, maximumObjectSize: settings.maxObjectSize)
        } catch .objectTooLarge {
            throw Failure(code: .entityTooLarge)
        } catch {
            throw Failure(code: .invalidPartSize)
        }
    }

    /// Turns a port's error into the job's failure code.
    func sourced<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as TransferError {
            throw Failure(JobFailure(error))
        } catch is SpoolError {
            throw Failure(code: .spoolFailed)
        } catch is ByteBudget.TooLarge {
            throw Failure(code: .spoolTooSmall)
        }
    }

    /// `copy`: UploadPartCopy per part, CopyObject for one part, each pinned to the source's ETag.
    /// The copy keeps the source's content type, metadata, cache control and disposition where
    /// the job's options set none: CopyObject by S3's `COPY` directive, a multipart copy by
    /// creating its upload with the source's attributes.
    private func copyWork(_ job: Job, _ options: JobOptions) async throws -> Work {
        guard let source = job.source.object, let key = job.objectKey else {
            throw Failure(code: .invalidJob)
        }
        let info = try await sourced { try await self.objects.properties(of: source.key) }
        let objectStore = self.objects
        let chosen = options.attributes
        let attributes = chosen.over(info.attributes)
        let pinned = job.sourceETag ?? info.etag
        return Work(
            plan: try plan(size: info.size, options, job), key: key,
            move: { part, range, uploadID, _ in
                (
                    try await objectStore.copyPart(
                        key: key, uploadID: uploadID ?? "", part: part, sourceKey: source.key,
                        range: range, ifMatch: pinned), nil
                )
            },
            single: { completing in
                try await completing()
                let etag = try await objectStore.copyObject(
                    from: source.key, to: key, attributes: chosen.isEmpty ? nil : attributes,
                    ifMatch: pinned, condition: options.writeCondition)
                return (etag, nil)
            },
            sourceETag: info.etag, attributes: attributes)
    }

    /// `import`: ranged GETs into spooled parts, each sent to S3 from its file, when the source
    /// serves ranges and says its size; otherwise the body is streamed once, in order.
    private func importWork(_ job: Job, _ options: JobOptions, _ control: JobControl) async throws -> Preparation {
        guard let url = job.source.url, let key = job.objectKey, let fetcher, let spool else {
            throw Failure(code: .invalidJob)
        }
        let probe = try await sourced { try await fetcher.probe(url) }
        guard probe.acceptsRanges, let size = probe.size else {
            return .stream(StreamSource(url: url, key: key, size: probe.size, etag: probe.etag))
        }
        let plan = try plan(size: size, options, job)
        let objectStore = self.objects
        let attributes = options.attributes
        let jobID = job.id, owner = job.owner
        // One part of the source on the spool, then to S3 from there: a retry fetches it again.
        let spooled: @Sendable (Int, ClosedRange<Int64>?, @Sendable (PartData) async throws -> RecordedPart) async throws -> RecordedPart =
            {
                number, range, send in
                let name = SpoolName.part(number)
                let length = range?.count64 ?? 0
                do {
                    try await control.waitingForRoom { try await spool.reserve(jobID: jobID, name: name, bytes: length, owner: owner) }
                } catch is ByteBudget.TooLarge {
                    throw TransferError(code: .spoolTooSmall, retryable: false)
                }
                defer { spool.remove(jobID: jobID, name: name) }
                let file: SpoolFile
                do {
                    guard let opened = try spool.open(jobID: jobID, name: name, create: true, truncate: true) else {
                        throw TransferError(code: .spoolFailed, retryable: true)
                    }
                    file = opened
                } catch is SpoolError {
                    throw TransferError(code: .spoolFailed, retryable: true)
                }
                // The bytes show as progress as they arrive, and stay shown while they go on to S3.
                let shown = ProgressMeter()
                // The bytes' CRC-32C when the fetcher summed them as they landed.
                var crc: UInt32?
                do {
                    if let range {
                        crc = try await metering(file, on: control.meter, shown: shown) {
                            try await fetcher.fetch(url, range: range, ifMatch: probe.etag, into: file)
                        }
                    }
                } catch {
                    control.meter.add(-shown.value)
                    throw error
                }
                guard file.size == length else {
                    control.meter.add(-shown.value)
                    throw TransferError.sourceChanged
                }
                control.meter.add(length - shown.value)
                return try await send(.file(file, offset: 0, length: length, crc32c: crc))
            }
        return .parts(
            Work(
                plan: plan, key: key,
                move: { part, range, uploadID, checksum in
                    let sent = try await spooled(part, range) { data in
                        try await objectStore.uploadPart(
                            key: key, uploadID: uploadID ?? "", part: part, data: data,
                            checksum: checksum)
                    }
                    return (sent.etag, sent.checksum)
                },
                single: { completing in
                    let sent = try await spooled(1, plan.range(ofPart: 1)) { data in
                        // The object's CRC-32C from the spooled bytes S3 is sent.
                        let crc = try data.crc32cBase64()
                        try await completing()
                        return RecordedPart(
                            number: 1, size: data.count,
                            etag: try await objectStore.putObject(
                                key: key, data: data, attributes: attributes, condition: options.writeCondition),
                            checksum: crc)
                    }
                    return (sent.etag, sent.checksum)
                },
                sourceETag: probe.etag, partChecksum: settings.partChecksum))
    }

}

extension JobRunner {
    /// Runs `fetch` and returns what it returns, adding to `meter` (and `shown`) the bytes it
    /// writes into `file` as they land, looked at twice a second: a part fetched slowly shows
    /// its progress, so it neither looks stuck to a client nor counts as stalled while its bytes
    /// flow.
    func metering<Fetched: Sendable>(
        _ file: SpoolFile, on meter: ProgressMeter, shown: ProgressMeter, _ fetch: @escaping @Sendable () async throws -> Fetched
    ) async throws -> Fetched {
        try await withThrowingTaskGroup(of: Fetched?.self) { group in
            group.addTask { try await fetch() }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: .milliseconds(500))
                    let landed = file.size - shown.value
                    if landed > 0 {
                        shown.add(landed)
                        meter.add(landed)
                    }
                }
                return nil
            }
            defer { group.cancelAll() }
            // The watcher never ends first (it only stops once cancelled).
            guard let fetched = try await group.next(), let fetched else { throw CancellationError() }
            return fetched
        }
    }
}

extension ClosedRange where Bound == Int64 {
    var count64: Int64 { upperBound - lowerBound + 1 }
}
