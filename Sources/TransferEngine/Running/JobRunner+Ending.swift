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
    func complete(_ work: Work, uploadID: String?, parts: [RecordedPart], condition: WriteCondition?) async throws -> String {
        guard let uploadID else { throw Failure(code: .internalError) }
        return try await completeUpload(
            key: work.key, uploadID: uploadID, parts: parts, size: work.plan.objectSize, condition: condition)
    }

    /// CompleteMultipartUpload, then the object checked: the multipart ETag of the parts (when
    /// S3's rule allows computing it) and `size`.
    /// With `condition`, the completion is refused (`objectExists`, `destinationChanged`) when
    /// the key is not as the job asked.
    func completeUpload(
        key: String, uploadID: String, parts: [RecordedPart], size: Int64, condition: WriteCondition?
    ) async throws -> String {
        let etag = try await objects.completeMultipartUpload(key: key, uploadID: uploadID, parts: parts, condition: condition)
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

    /// A failure the job cannot get past in this run. One that may pass by waiting (S3 or a
    /// source unavailable past the part's retries) sends the job back to `queued` until a
    /// `retryAt` (`EngineSettings.jobBackoff`), with its multipart upload and recorded parts,
    /// unless it has made no progress for `GATEWAY_RETRY_WINDOW`: then it fails, still keeping
    /// them for its owner's retry. Any other failure ends the job.
    func giveUp(_ lease: Lease, _ job: Job, _ failure: JobFailure, upload: MultipartUploadHandle) async throws -> Outcome {
        guard failure.passesWithTime else { return try await fail(lease, job, failure, upload: upload) }
        try Task.checkCancellation()
        // The record as it is now: this run may have made progress since it was claimed.
        let current = try await store.job(id: job.id) ?? job
        let now = clock.now()
        guard Int64(now) - current.bytesAt < Int64(settings.retryWindowSeconds) * 1000 else {
            return try await fail(lease, job, failure.resumable, upload: upload)
        }
        let retryAt = Int64(now + settings.jobBackoff.delay(wait: current.retries + 1, unit: settings.random()))
        cleanUp(job, after: .queued)
        do {
            try await store.postpone(lease, until: retryAt, lastError: failure)
        } catch is LeaseLost {
            return .leaseLost
        }
        return .postponed(retryAt: retryAt)
    }

    /// Ends the job as failed. Its multipart upload is aborted so nothing is left behind, unless
    /// the failure is `retryable`: then it stays, with the recorded parts, for its owner's retry
    /// (the janitor aborts it after `GATEWAY_UPLOAD_TTL`). A work that was stopped (cancelled)
    /// writes no ending: its lifetime decides.
    func fail(_ lease: Lease, _ job: Job, _ failure: JobFailure, upload: MultipartUploadHandle) async throws -> Outcome {
        try Task.checkCancellation()
        if !failure.retryable, let uploadID = upload.id, let key = job.objectKey {
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
