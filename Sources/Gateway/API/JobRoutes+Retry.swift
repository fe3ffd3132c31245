import Auth
import HTTPServer
import TransferEngine

/// `POST /v1/jobs/{id}/retry`: a job that failed in a way waiting could get past (its
/// `error.retryable`) goes on from its stored parts. Its S3 multipart upload is kept for
/// `GATEWAY_UPLOAD_TTL` after the failure (then the janitor aborts it), so a retry within that
/// sends only the parts S3 does not hold. A job that waits or runs already is answered as it
/// is (a second retry changes nothing); one that completed, was canceled, or failed for good is
/// 409 `job_not_retryable`. A retry counts against the identity's creation rate and, the job
/// being active again, its quota of active jobs.
extension JobRoutes {
    func retry(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let (visible, identity) = try await visibleJob(http, id: id)
        guard let caller = identity.id, AccessPolicy.same(visible.owner, caller) else { throw APIError.forbidden }
        // A retry makes work as a creation does: it counts against the same rate.
        try await context.limits.admitCreation(caller)
        let failedSince = Int64(context.now() - context.settings.uploadTTL) * 1000
        let store = jobs.store, quota = context.limits.quota
        guard let job = try await Shield.run({ try await store.retry(id: visible.id, failedSince: failedSince, quota: quota) }) else {
            throw APIError.notFound
        }
        if job.state.isFinal { throw Self.notRetryable(job, failedSince: failedSince) }
        var response = Responses.json(200, bytes: json(job, http))
        response.headers.add("ETag", Self.etag(job))
        return response
    }

    /// Why `job`, ended, cannot be retried.
    private static func notRetryable(_ job: Job, failedSince: Int64) -> APIError {
        switch job.state {
        case .failed where job.error?.retryable == true && (job.completedAt ?? 0) < failedSince:
            return APIError(
                .jobNotRetryable, "The job failed longer ago than GATEWAY_UPLOAD_TTL and its stored parts are gone; create it again.")
        case .failed:
            return APIError(.jobNotRetryable, "The job failed in a way retrying cannot get past (see its error); create a new job.")
        default:
            return APIError(.jobNotRetryable, "The job is \(job.state.rawValue); only a failed job can be retried.")
        }
    }
}
