import Postgres
import TransferEngine

/// The two ways a job waits out a failure that may pass: sent back by its runner until
/// `retry_at`, and retried by its owner after it failed that way. Neither touches `completing`:
/// a job that began writing its object may already have written it, so pause and cancel stay
/// refused.
extension PostgresJobStore {
    public func postpone(_ lease: Lease, until retryAt: Int64, lastError: JobFailure) async throws {
        let waiting = JobLifecycle.target(of: .postpone).rawValue
        try await writeUnderLease(
            lease,
            """
            UPDATE jobs SET state = \(waiting), retry_at = to_timestamp(\(retryAt)::double precision / 1000),
                   last_error = \(JobColumns.json(lastError))::jsonb, retries = retries + 1,
                   lease_owner = NULL, lease_expires_at = NULL, bytes_flowing = 0,
                   version = version + 1, updated_at = now()
            WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
            RETURNING 1 AS ok
            """)
    }

    public func retry(id: String, failedSince: Int64, quota: OwnerQuota?) async throws -> Job? {
        try await pool.withTransaction { connection in
            let found = try connection.query(
                """
                SELECT owner, type, state = ANY(\(JobLifecycle.textArray(from: .retry))::text[])
                                    AND coalesce((error->>'retryable')::boolean, false)
                                    AND completed_at >= to_timestamp(\(failedSince)::double precision / 1000) AS retryable
                FROM jobs WHERE id = \(id)::uuid FOR UPDATE
                """
            ).first
            guard let found else { return nil }
            if try found.bool("retryable") {
                if let quota {
                    let upload = try found.string("type") == Job.Kind.upload.rawValue
                    try OwnerLimits.check(quota, owner: try found.string("owner"), creating: .job(upload: upload), on: connection)
                }
                try connection.query(
                    """
                    UPDATE jobs SET state = CASE WHEN type = 'upload' THEN \(JobLifecycle.target(of: .retryUpload).rawValue)
                                                 ELSE \(JobLifecycle.target(of: .retry).rawValue) END,
                           last_error = error, error = NULL, completed_at = NULL, retry_at = NULL, retries = 0, crashes = 0,
                           bytes_at = now(), version = version + 1, updated_at = now()
                    WHERE id = \(id)::uuid
                    """)
            }
            return try connection.query("SELECT \(Self.columns) FROM jobs WHERE id = \(id)::uuid").first.map(Self.decode)
        }
    }
}
