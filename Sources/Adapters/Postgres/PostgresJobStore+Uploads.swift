import Foundation
import Postgres
import TransferEngine

/// The upload receiver's side of the job table (`UploadJobStore`): an upload job claimed by the
/// request that brings its bytes, its parts and spooled tail recorded under that claim.
extension PostgresJobStore {
    public func claimUpload(id: String, owner: String, leaseMilliseconds: Int64) async throws -> UploadClaim? {
        let waiting = JobLifecycle.textArray(from: .claimUpload)
        return try await pool.withConnection { connection in
            let rows = try connection.query(
                """
                UPDATE jobs SET crashes = crashes + CASE WHEN state = 'running' AND lease_owner IS NOT NULL
                                                              AND lease_owner <> \(owner) THEN 1 ELSE 0 END,
                       state = 'running', lease_owner = \(owner), lease_token = lease_token + 1,
                       lease_expires_at = now() + \(leaseMilliseconds)::bigint * interval '1 millisecond',
                       version = version + 1, updated_at = now()
                WHERE id = \(id)::uuid AND type = 'upload'
                  AND (state = ANY(\(waiting)::text[]) OR (state = 'running'
                       AND (lease_expires_at < now() OR lease_owner = \(owner))))
                RETURNING \(Self.columns), upload_tail_segments::text AS tail
                """)
            guard let row = rows.first else { return nil }
            let job = try Self.decode(row)
            return UploadClaim(
                job: job,
                lease: Lease(
                    jobID: job.id, owner: owner, token: Int64(try row.int("lease_token")),
                    expiresAt: Int64(try row.int("lease_expires_ms"))),
                tail: try Self.segments(row.string("tail")))
        }
    }

    public func recordUploadPart(_ part: RecordedPart, under lease: Lease) async throws -> [TailSegment] {
        try await recordUploadParts([part], under: lease)
    }

    public func recordUploadParts(_ parts: [RecordedPart], under lease: Lease) async throws -> [TailSegment] {
        try await pool.withTransaction { connection in
            let before = try Self.lock(lease, on: connection)
            // By the parts' own sizes, as recordPart does; bytes_transferred is only ever moved by
            // these deltas, so it is the parts' sum, and with the tail forgotten so is
            // bytes_committed (the right-hand sides read the row as it was).
            var delta: Int64 = 0
            for part in parts { delta += part.size - (try Self.upsertPart(part, jobID: lease.jobID, on: connection)) }
            try connection.query(
                """
                UPDATE jobs SET upload_tail_segments = '[]', bytes_transferred = bytes_transferred + \(delta),
                       bytes_committed = bytes_transferred + \(delta), bytes_at = now(), version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid
                """)
            return before
        }
    }

    public func saveUploadTail(_ segments: [TailSegment], under lease: Lease) async throws -> [TailSegment] {
        let json = String(decoding: try JSONEncoder().encode(segments), as: UTF8.self)
        let bytes = segments.reduce(Int64(0)) { $0 + $1.size }
        return try await pool.withTransaction { connection in
            let before = try Self.lock(lease, on: connection)
            try connection.query(
                """
                UPDATE jobs SET upload_tail_segments = \(json)::jsonb, bytes_committed = bytes_transferred + \(bytes),
                       bytes_at = now(), version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid
                """)
            return before.filter { !segments.contains($0) }
        }
    }

    public func releaseUpload(_ lease: Lease) async throws {
        let waiting = JobLifecycle.target(of: .releaseUpload).rawValue
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE jobs SET state = \(waiting), lease_owner = NULL, lease_expires_at = NULL, bytes_flowing = 0, version = version + 1,
                       updated_at = now()
                WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
                """)
        }
    }
}
