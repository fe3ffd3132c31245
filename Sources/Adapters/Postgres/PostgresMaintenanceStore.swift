import Foundation
import Gateway
import Postgres
import TransferEngine

/// `MaintenanceStore` over PostgreSQL: the janitor's questions about jobs.
public struct PostgresMaintenanceStore: MaintenanceStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func expireIdleUploads(before cutoff: Double, prefixes: [String]) async throws -> [ExpiredUpload] {
        let expiring = JobLifecycle.Action.expire
        let from = JobLifecycle.textArray(from: expiring)
        let error = JobColumns.json(JobFailure(.uploadExpired))
        return try await pool.withConnection { connection in
            try prefixes.flatMap { prefix in
                try connection.query(
                    """
                    UPDATE jobs SET state = \(JobLifecycle.target(of: expiring).rawValue), error = \(error)::jsonb,
                           lease_owner = NULL, lease_expires_at = NULL, version = version + 1, updated_at = now(), completed_at = now()
                    WHERE type = 'upload' AND starts_with(object_key, \(prefix))
                      AND (state = ANY(\(from)::text[]) OR (state = 'running' AND lease_expires_at < now()))
                      AND coalesce(bytes_at, created_at) <= to_timestamp(\(cutoff))
                    RETURNING object_key, upload_id, upload_tail_segments::text AS tail
                    """
                ).map { row in
                    ExpiredUpload(
                        objectKey: try row.string("object_key"), uploadID: try row.optionalString("upload_id"),
                        tail: (try? JSONDecoder().decode([TailSegment].self, from: Data(row.string("tail").utf8))) ?? [])
                }
            }
        }
    }

    public func releaseRetainedUploads(before cutoff: Double, prefixes: [String]) async throws -> [ExpiredUpload] {
        try await pool.withConnection { connection in
            try prefixes.flatMap { prefix in
                try connection.query(
                    """
                    WITH kept AS (SELECT id, upload_id FROM jobs
                                  WHERE state = 'failed' AND upload_id IS NOT NULL AND starts_with(object_key, \(prefix))
                                    AND coalesce((error->>'retryable')::boolean, false)
                                    AND completed_at <= to_timestamp(\(cutoff))
                                  FOR UPDATE)
                    UPDATE jobs SET error = error - 'retryable', upload_id = NULL, version = version + 1, updated_at = now()
                    FROM kept WHERE jobs.id = kept.id
                    RETURNING jobs.object_key, kept.upload_id
                    """
                ).compactMap { row in
                    guard let key = try row.optionalString("object_key"), let uploadID = try row.optionalString("upload_id") else {
                        return nil
                    }
                    return ExpiredUpload(objectKey: key, uploadID: uploadID, tail: [])
                }
            }
        }
    }

    public func activeJobIDs() async throws -> Set<String> {
        try await pool.withConnection { connection in
            let working = JobLifecycle.textArray([Job.State.queued, .running])
            return Set(
                try connection.query("SELECT id::text AS id FROM jobs WHERE state = ANY(\(working)::text[])").map { try $0.string("id") })
        }
    }

    public func stagedTails(of ids: [String]) async throws -> [String: StagedTails] {
        guard !ids.isEmpty else { return [:] }
        let list = "{" + ids.joined(separator: ",") + "}"
        return try await pool.withConnection { connection in
            var known: [String: StagedTails] = [:]
            for row in try connection.query(
                """
                SELECT id::text AS id, upload_tail_segments::text AS tail,
                       state IN ('completed', 'failed', 'canceled') AS ended
                FROM jobs WHERE id = ANY(\(list)::uuid[])
                """)
            {
                let segments = (try? JSONDecoder().decode([TailSegment].self, from: Data(row.string("tail").utf8))) ?? []
                known[try row.string("id")] = StagedTails(ended: try row.bool("ended"), keys: Set(segments.map(\.key)))
            }
            return known
        }
    }
}
