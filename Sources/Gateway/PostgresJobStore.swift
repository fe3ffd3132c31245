import Foundation
import Postgres
import TransferEngine

/// `JobStore` over PostgreSQL. Claims use `FOR UPDATE SKIP LOCKED`, so instances never take
/// the same job; every write under a lease names its token in the `WHERE`, so a stale worker's
/// write touches no row and becomes `LeaseLost`.
public struct PostgresJobStore: UploadStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    private static let columns = SQLFragment("""
        id::text, owner, type, state, object_key, source::text, options::text, bytes_total, bytes_transferred,
        bytes_committed, part_size, parts_total, upload_id, etag, error::text, attempts, version, lease_owner,
        lease_token, (extract(epoch FROM lease_expires_at) * 1000)::bigint AS lease_expires_ms,
        (extract(epoch FROM created_at) * 1000)::bigint AS created_ms,
        (extract(epoch FROM updated_at) * 1000)::bigint AS updated_ms,
        (extract(epoch FROM completed_at) * 1000)::bigint AS completed_ms,
        (SELECT count(*) FROM job_parts WHERE job_id = jobs.id) AS parts_completed
        """)

    @discardableResult
    public func insert(_ job: Job) async throws -> Job {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                INSERT INTO jobs (id, owner, type, state, object_key, source, options, bytes_total, part_size)
                VALUES (\(job.id)::uuid, \(job.owner), \(job.kind.rawValue), \(job.state.rawValue), \(job.objectKey),
                        \(job.source)::jsonb, \(job.options)::jsonb, \(job.bytesTotal), \(job.partSize))
                RETURNING \(Self.columns)
                """)
            return try rows.first.map(Self.decode) ?? job
        }
    }

    public func job(id: String) async throws -> Job? {
        try await pool.withConnection { connection in
            try connection.query("SELECT \(Self.columns) FROM jobs WHERE id = \(id)::uuid").first.map(Self.decode)
        }
    }

    public func claim(owner: String, leaseMilliseconds: Int64) async throws -> (Job, Lease)? {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                UPDATE jobs SET state = 'running', lease_owner = \(owner), lease_token = lease_token + 1,
                       lease_expires_at = now() + \(leaseMilliseconds)::bigint * interval '1 millisecond',
                       attempts = attempts + 1, version = version + 1, updated_at = now()
                WHERE id = (SELECT id FROM jobs
                            WHERE type <> 'upload' AND (state = 'queued' OR (state = 'running' AND lease_expires_at < now()))
                            ORDER BY created_at, id
                            FOR UPDATE SKIP LOCKED
                            LIMIT 1)
                RETURNING \(Self.columns)
                """)
            guard let row = rows.first else { return nil }
            let job = try Self.decode(row)
            return (job, Lease(jobID: job.id, owner: owner, token: Int64(try row.int("lease_token")),
                               expiresAt: Int64(try row.int("lease_expires_ms"))))
        }
    }

    public func renew(_ lease: Lease, leaseMilliseconds: Int64) async throws -> Lease {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                UPDATE jobs SET lease_expires_at = now() + \(leaseMilliseconds)::bigint * interval '1 millisecond'
                WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
                RETURNING (extract(epoch FROM lease_expires_at) * 1000)::bigint AS expires
                """)
            guard let row = rows.first else { throw LeaseLost(jobID: lease.jobID) }
            return Lease(jobID: lease.jobID, owner: lease.owner, token: lease.token, expiresAt: Int64(try row.int("expires")))
        }
    }

    public func release(_ lease: Lease) async throws {
        try await pool.withConnection { connection in
            try connection.query("""
                UPDATE jobs SET lease_expires_at = now() - interval '1 second', lease_owner = NULL,
                       version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
                """)
        }
    }

    public func recordPart(_ part: RecordedPart, under lease: Lease) async throws {
        try await pool.withTransaction { connection in
            let previous = try Self.upsertPart(part, under: lease, on: connection)
            let delta = part.size - previous
            try connection.query("""
                UPDATE jobs SET bytes_committed = bytes_committed + \(delta), bytes_transferred = bytes_transferred + \(delta),
                       version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid
                """)
        }
    }

    public func parts(of jobID: String) async throws -> [RecordedPart] {
        try await pool.withConnection { connection in
            try connection.query("SELECT part_number, size, etag FROM job_parts WHERE job_id = \(jobID)::uuid ORDER BY part_number")
                .map { RecordedPart(number: try $0.int("part_number"), size: Int64(try $0.int("size")), etag: try $0.string("etag")) }
        }
    }

    public func start(_ lease: Lease, uploadID: String?, partsTotal: Int, partSize: Int64, bytesTotal: Int64) async throws {
        try await writeUnderLease(lease, """
            UPDATE jobs SET upload_id = \(uploadID), parts_total = \(partsTotal), part_size = \(partSize), bytes_total = \(bytesTotal),
                   version = version + 1, updated_at = now()
            WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
            RETURNING 1 AS ok
            """)
    }

    public func finish(_ lease: Lease, state: Job.State, etag: String?, error: String?) async throws {
        try await writeUnderLease(lease, """
            UPDATE jobs SET state = \(state.rawValue), etag = \(etag), error = \(error)::jsonb, lease_owner = NULL,
                   lease_expires_at = NULL, completed_at = now(), version = version + 1, updated_at = now()
            WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
            RETURNING 1 AS ok
            """)
    }

    public func list(owner: String?, state: Job.State?, limit: Int, after cursor: String?) async throws -> [Job] {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT \(Self.columns) FROM jobs
                WHERE (\(owner)::text IS NULL OR owner = \(owner))
                  AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
                  AND (\(cursor)::uuid IS NULL OR (created_at, id) < (SELECT created_at, id FROM jobs WHERE id = \(cursor)::uuid))
                ORDER BY created_at DESC, id DESC
                LIMIT \(limit)
                """).map(Self.decode)
        }
    }

    public func transition(id: String, from: Set<Job.State>, to: Job.State) async throws -> Job? {
        try await pool.withConnection { connection in
            let allowed = "{" + from.map(\.rawValue).sorted().joined(separator: ",") + "}"
            _ = try connection.query("""
                UPDATE jobs SET state = \(to.rawValue), version = version + 1, updated_at = now(),
                       completed_at = CASE WHEN \(to.rawValue) = 'canceled' THEN now() ELSE completed_at END
                WHERE id = \(id)::uuid AND state = ANY(\(allowed)::text[])
                """)
            return try connection.query("SELECT \(Self.columns) FROM jobs WHERE id = \(id)::uuid").first.map(Self.decode)
        }
    }

    public func uploadIDsInUse(key: String) async throws -> Set<String> {
        try await pool.withConnection { connection in
            Set(try connection.query("""
                SELECT upload_id AS id FROM jobs
                WHERE object_key = \(key) AND upload_id IS NOT NULL AND state IN ('pending', 'queued', 'running', 'paused')
                UNION SELECT s3_upload_id AS id FROM uploads WHERE object_key = \(key) AND state = 'open'
                """).map { try $0.string("id") })
        }
    }

    // MARK: uploads

    public func claimUpload(id: String, owner: String, leaseMilliseconds: Int64) async throws -> UploadClaim? {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                UPDATE jobs SET state = 'running', lease_owner = \(owner), lease_token = lease_token + 1,
                       lease_expires_at = now() + \(leaseMilliseconds)::bigint * interval '1 millisecond',
                       version = version + 1, updated_at = now()
                WHERE id = \(id)::uuid AND type = 'upload'
                  AND (state = 'pending' OR (state = 'running'
                       AND (lease_expires_at < now() OR lease_owner = \(owner))))
                RETURNING \(Self.columns), upload_tail
                """)
            guard let row = rows.first else { return nil }
            let job = try Self.decode(row)
            return UploadClaim(job: job, lease: Lease(jobID: job.id, owner: owner, token: Int64(try row.int("lease_token")),
                                                      expiresAt: Int64(try row.int("lease_expires_ms"))),
                               tail: try row.optionalBytes("upload_tail") ?? [])
        }
    }

    public func recordUploadPart(_ part: RecordedPart, under lease: Lease) async throws {
        try await pool.withTransaction { connection in
            // By the part's own size, as recordPart does: summing every recorded part for each new
            // one made a 10,000-part upload read some 50 M rows. bytes_transferred is only ever
            // moved by these deltas, so it is the parts' sum, and with the tail emptied so is
            // bytes_committed (the right-hand sides read the row as it was).
            let delta = part.size - (try Self.upsertPart(part, under: lease, on: connection))
            try connection.query("""
                UPDATE jobs SET upload_tail = NULL, bytes_transferred = bytes_transferred + \(delta),
                       bytes_committed = bytes_transferred + \(delta), version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid
                """)
        }
    }

    public func saveUploadTail(_ tail: [UInt8], under lease: Lease) async throws {
        let bytes: PostgresBytes? = tail.isEmpty ? nil : PostgresBytes(tail)
        try await writeUnderLease(lease, """
            UPDATE jobs SET upload_tail = \(bytes)::bytea,
                   bytes_committed = bytes_transferred + \(tail.count),
                   version = version + 1, updated_at = now()
            WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
            RETURNING 1 AS ok
            """)
    }

    public func releaseUpload(_ lease: Lease) async throws {
        try await pool.withConnection { connection in
            try connection.query("""
                UPDATE jobs SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
                """)
        }
    }

    /// Inside a transaction: locks the job row under `lease`'s token first (if the job is not
    /// ours any more, nothing is written: `LeaseLost`), then inserts or replaces the part.
    /// Returns the size the part had before (0 when new).
    private static func upsertPart(_ part: RecordedPart, under lease: Lease, on connection: PostgresConnection) throws -> Int64 {
        let owned = try connection.query("""
            SELECT 1 FROM jobs WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running' FOR UPDATE
            """)
        guard !owned.isEmpty else { throw LeaseLost(jobID: lease.jobID) }
        let previous = try connection.query("""
            SELECT size FROM job_parts WHERE job_id = \(lease.jobID)::uuid AND part_number = \(part.number)
            """).first.map { Int64(try $0.int("size")) } ?? 0
        try connection.query("""
            INSERT INTO job_parts (job_id, part_number, size, etag) VALUES (\(lease.jobID)::uuid, \(part.number), \(part.size), \(part.etag))
            ON CONFLICT (job_id, part_number) DO UPDATE SET size = EXCLUDED.size, etag = EXCLUDED.etag,
                attempts = job_parts.attempts + 1, completed_at = now()
            """)
        return previous
    }

    private func writeUnderLease(_ lease: Lease, _ sql: SQL) async throws {
        let changed = try await pool.withConnection { try !$0.query(sql).isEmpty }
        if !changed { throw LeaseLost(jobID: lease.jobID) }
    }

    static func decode(_ row: PostgresRow) throws -> Job {
        guard let kind = Job.Kind(rawValue: try row.string("type")), let state = Job.State(rawValue: try row.string("state")) else {
            throw PostgresRow.DecodingError(column: "type/state", expected: "a known value")
        }
        var job = Job(id: try row.string("id"), owner: try row.string("owner"), kind: kind, state: state,
                      objectKey: try row.optionalString("object_key"), source: try row.optionalString("source"),
                      options: try row.string("options"), bytesTotal: try row.optionalInt("bytes_total").map(Int64.init),
                      partSize: Int64(try row.int("part_size")))
        job.bytesTransferred = Int64(try row.int("bytes_transferred"))
        job.bytesCommitted = Int64(try row.int("bytes_committed"))
        job.partsTotal = try row.optionalInt("parts_total")
        job.uploadID = try row.optionalString("upload_id")
        job.etag = try row.optionalString("etag")
        job.error = try row.optionalString("error")
        job.attempts = try row.int("attempts")
        job.version = Int64(try row.int("version"))
        job.createdAt = Int64(try row.int("created_ms"))
        job.updatedAt = Int64(try row.int("updated_ms"))
        job.completedAt = try row.optionalInt("completed_ms").map(Int64.init)
        job.partsCompleted = try row.optionalInt("parts_completed") ?? 0
        return job
    }
}
