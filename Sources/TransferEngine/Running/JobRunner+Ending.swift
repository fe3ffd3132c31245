/// How a job ends: completion checked against what the parts make, failure and cancel leaving
/// nothing behind (the multipart upload aborted, the spool emptied).
extension JobRunner {
    /// The ETag of `key` if it is already the object the job's recorded parts make (same size,
    /// and the multipart ETag of those parts), else nil.
    func completedBefore(_ job: Job, key: String, plan: PartPlan) async throws -> String? {
        let parts = try await store.parts(of: job.id)
        guard parts.count == plan.partCount, parts.allSatisfy(plan.holds),
            let expected = MultipartETag.expected(for: parts.map(\.etag)),
            let current = try? await objects.size(of: key),
            current.size == plan.objectSize, MultipartETag.same(current.etag, expected)
        else { return nil }
        return current.etag
    }

    /// Finishes the object and checks it: size and, where S3's rule allows computing it, ETag.
    func complete(_ work: Work, uploadID: String?, parts: [RecordedPart]) async throws -> String {
        guard let uploadID else { throw Failure(code: .internalError) }
        return try await completeUpload(key: work.key, uploadID: uploadID, parts: parts, size: work.plan.objectSize)
    }

    /// CompleteMultipartUpload, then the object checked: the multipart ETag of the parts (when
    /// S3's rule allows computing it) and `size`.
    func completeUpload(key: String, uploadID: String, parts: [RecordedPart], size: Int64) async throws -> String {
        let etag = try await objects.completeMultipartUpload(key: key, uploadID: uploadID, parts: parts)
        if let expected = MultipartETag.expected(for: parts.map(\.etag)), !MultipartETag.same(expected, etag) {
            throw Failure(code: .etagMismatch)
        }
        let check = try await objects.size(of: key)
        guard check.size == size else { throw Failure(code: .sizeMismatch) }
        return etag
    }

    /// Paused, canceled, or taken over: the stored state says which. A canceled job's upload is
    /// aborted and its spool removed here, since this runner is the one that knows them.
    func whyLeaseEnded(_ job: Job, upload: MultipartUploadHandle) async throws -> Outcome {
        switch try await store.job(id: job.id)?.state {
        case .canceled?:
            let objects = self.objects
            if let uploadID = upload.id, let key = job.objectKey {
                await Task.detached { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }.value
            }
            cleanUp(job, after: .canceled)
            observer.jobEnded(kind: job.kind, state: .canceled)
            return .stopped(.canceled)
        case .paused?:
            cleanUp(job, after: .paused)
            return .stopped(.paused)
        default:
            return .leaseLost
        }
    }

    /// Ends the job as failed, aborting its multipart upload so nothing is left behind. A work
    /// that was stopped (cancelled) writes no ending: its lifetime decides.
    func fail(_ lease: Lease, _ job: Job, _ failure: JobFailure, upload: MultipartUploadHandle) async throws -> Outcome {
        try Task.checkCancellation()
        if let uploadID = upload.id, let key = job.objectKey {
            let objects = self.objects
            await Task.detached { try? await objects.abortMultipartUpload(key: key, uploadID: uploadID) }.value
        }
        cleanUp(job, after: .failed)
        do {
            try await store.finish(lease, state: .failed, etag: nil, error: failure)
        } catch is LeaseLost {
            return .leaseLost
        }
        observer.jobEnded(kind: job.kind, state: .failed)
        return .failed(code: failure.code)
    }

    /// Spooled parts go when the job stops.
    func cleanUp(_ job: Job, after state: Job.State) {
        spool?.removeAll(jobID: job.id, keeping: [])
    }
}
