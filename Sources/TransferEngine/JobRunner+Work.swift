extension JobRunner {
    /// Sizes the job's source and says how its parts move, by type.
    func prepare(_ job: Job, _ options: JobOptions) async throws -> Work {
        switch job.kind {
        case .copy: return try await copyWork(job, options)
        case .import: return try await importWork(job, options)
        case .download: return try await downloadWork(job, options)
        case .upload: throw Failure(code: "InvalidJob")
        }
    }

    func plan(size: Int64, _ options: JobOptions) throws -> PartPlan {
        do {
            return try PartPlan(objectSize: size, requestedPartSize: options.partSize ?? settings.partSize,
                                maximumObjectSize: settings.maxObjectSize)
        } catch .objectTooLarge {
            throw Failure(code: "EntityTooLarge")
        } catch {
            throw Failure(code: "InvalidPartSize")
        }
    }

    /// Turns a port's error into the job's failure code.
    func sourced<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as TransferError {
            throw Failure(code: error.code)
        } catch is SpoolError {
            throw Failure(code: "SpoolFailed")
        }
    }

    /// `copy`: UploadPartCopy per part, CopyObject for one part.
    private func copyWork(_ job: Job, _ options: JobOptions) async throws -> Work {
        guard let source = decode(ObjectSource.self, job.source), let key = job.objectKey else { throw Failure(code: "InvalidJob") }
        let info = try await sourced { try await self.objects.size(of: source.key) }
        let objectStore = self.objects
        let attributes = options.attributes
        return Work(plan: try plan(size: info.size, options), destination: .upload(key: key),
                    move: { part, range, uploadID in
                        try await objectStore.copyPart(key: key, uploadID: uploadID ?? "", part: part, sourceKey: source.key, range: range)
                    },
                    single: { try await objectStore.copyObject(from: source.key, to: key, attributes: attributes) },
                    stillHolds: nil, sourceETag: info.etag)
    }

    /// `download`: ranged GETs (pinned to the object's ETag) into the spool file; each part's
    /// SHA-256 is what is recorded, so a restart trusts only the bytes the spool still holds.
    private func downloadWork(_ job: Job, _ options: JobOptions) async throws -> Work {
        guard let source = decode(ObjectSource.self, job.source), let spool else { throw Failure(code: "InvalidJob") }
        let info = try await sourced { try await self.objects.size(of: source.key) }
        let plan = try plan(size: info.size, options)
        let resumed = job.partsTotal == plan.partCount
        let file = try await sourced {
            guard let file = try spool.open(jobID: job.id, name: .download, create: true, truncate: !resumed) else {
                throw Failure(code: "SpoolFailed")
            }
            try file.truncate(to: plan.objectSize)
            return file
        }
        let objectStore = self.objects
        return Work(plan: plan, destination: .spool(file),
                    move: { _, range, _ in
                        guard let range else { return "sha256:" }
                        try await objectStore.read(key: source.key, range: range, ifMatch: info.etag, into: file)
                        guard let digest = file.sha256(range) else { throw TransferError(code: "SpoolFailed", retryable: true) }
                        return "sha256:" + digest
                    },
                    single: nil,
                    stillHolds: { part, range in
                        guard let range else { return part.etag == "sha256:" }
                        return part.etag == "sha256:" + (file.sha256(range) ?? "-")
                    },
                    sourceETag: info.etag)
    }

    /// `import`: ranged GETs straight into parts when the source serves ranges and says its
    /// size; otherwise the body is read once, in order, into the spool and sent from there.
    private func importWork(_ job: Job, _ options: JobOptions) async throws -> Work {
        guard let source = decode(URLSource.self, job.source), let key = job.objectKey, let fetcher else {
            throw Failure(code: "InvalidJob")
        }
        let objectStore = self.objects
        let attributes = options.attributes
        let probe = try await sourced { try await fetcher.probe(source.url) }
        if probe.acceptsRanges, let size = probe.size {
            let plan = try plan(size: size, options)
            let fetch: @Sendable (ClosedRange<Int64>) async throws -> [UInt8] = { range in
                let bytes = try await fetcher.fetch(source.url, range: range, ifMatch: probe.etag)
                guard Int64(bytes.count) == range.count64 else { throw TransferError(code: "SourceChanged", retryable: true) }
                return bytes
            }
            return Work(plan: plan, destination: .upload(key: key),
                        move: { part, range, uploadID in
                            var bytes: [UInt8] = []
                            if let range { bytes = try await fetch(range) }
                            return try await objectStore.uploadPart(key: key, uploadID: uploadID ?? "", part: part, data: .bytes(bytes))
                        },
                        single: {
                            let bytes = size == 0 ? [] : try await fetch(0...(size - 1))
                            return try await objectStore.putObject(key: key, data: .bytes(bytes), attributes: attributes)
                        },
                        stillHolds: nil, sourceETag: probe.etag)
        }
        guard let spool else { throw Failure(code: "InvalidJob") }
        let limit = settings.maxObjectSize
        let file = try await sourced {
            guard let file = try spool.open(jobID: job.id, name: .importBody, create: true, truncate: true) else {
                throw Failure(code: "SpoolFailed")
            }
            _ = try await fetcher.fetchAll(source.url, into: file, limit: limit)
            return file
        }
        let size = file.size
        return Work(plan: try plan(size: size, options), destination: .upload(key: key),
                    move: { part, range, uploadID in
                        try await objectStore.uploadPart(key: key, uploadID: uploadID ?? "", part: part,
                                                     data: .file(file, offset: range?.lowerBound ?? 0, length: range?.count64 ?? 0))
                    },
                    single: { try await objectStore.putObject(key: key, data: .file(file, offset: 0, length: size), attributes: attributes) },
                    // Read again from a source that may have changed: a recorded part counts
                    // only if the new body has the same bytes there (S3's part ETag is their MD5).
                    stillHolds: { part, range in
                        guard let range, let md5 = file.md5(range) else { return false }
                        return MultipartETag.same(part.etag, md5)
                    },
                    sourceETag: probe.etag)
    }

    private func decode<T: Decodable>(_ type: T.Type, _ json: String?) -> T? {
        guard let json else { return nil }
        return try? JSONDecoder().decode(T.self, from: Data(json.utf8))
    }
}

extension ClosedRange where Bound == Int64 {
    var count64: Int64 { upperBound - lowerBound + 1 }
}

import Foundation
