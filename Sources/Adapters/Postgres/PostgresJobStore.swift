import Foundation
import Postgres
import TransferEngine

/// `JobStore` over PostgreSQL. Claims use `FOR UPDATE SKIP LOCKED`, so instances never take
/// the same job; every write under a lease names its token in the `WHERE`, so a stale worker's
/// write touches no row and becomes `LeaseLost`. Every change bumps `version`, and a trigger
/// turns that into a `NOTIFY` (see `Schema`), which is what wakes long polls on every instance.
public struct PostgresJobStore: UploadJobStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    static let columns = SQLFragment(
        """
        id::text, owner, type, state, object_key, source::text, options::text, bytes_total, bytes_transferred, bytes_flowing,
        bytes_committed, part_size, parts_total, upload_id, part_checksum, etag, checksum_algorithm, checksum_value, error::text, attempts, crashes, completing, source_etag, version,
        (extract(epoch FROM retry_at) * 1000)::bigint AS retry_ms, last_error::text, retries,
        lease_owner, lease_token, (extract(epoch FROM lease_expires_at) * 1000)::bigint AS lease_expires_ms,
        (extract(epoch FROM created_at) * 1000)::bigint AS created_ms,
        (extract(epoch FROM updated_at) * 1000)::bigint AS updated_ms,
        (extract(epoch FROM completed_at) * 1000)::bigint AS completed_ms,
        (extract(epoch FROM coalesce(bytes_at, created_at)) * 1000)::bigint AS bytes_ms,
        (SELECT count(*) FROM job_parts WHERE job_id = jobs.id) AS parts_completed
        """)

    @discardableResult
    public func insert(_ job: Job, quota: OwnerQuota?) async throws -> Job {
        try await pool.withTransaction { connection in
            if let quota { try OwnerLimits.check(quota, owner: job.owner, creating: .job(upload: job.kind == .upload), on: connection) }
            let rows = try connection.query(
                """
                INSERT INTO jobs (id, owner, type, state, object_key, source, options, bytes_total, part_size, etag, source_etag,
                                  bytes_transferred, bytes_committed, completed_at, checksum_algorithm, checksum_value)
                VALUES (\(job.id)::uuid, \(job.owner), \(job.kind.rawValue), \(job.state.rawValue), \(job.objectKey),
                        \(JobColumns.json(job.source))::jsonb, \(JobColumns.json(job.options))::jsonb, \(job.bytesTotal), \(job.partSize), \(job.etag),
                        \(job.sourceETag), \(job.bytesTransferred), \(job.bytesCommitted),
                        CASE WHEN \(job.state.isFinal) THEN now() END, \(job.checksum?.algorithm.rawValue), \(job.checksum?.value))
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

    /// Of the identities with runnable jobs, the one running fewest jobs now goes first, then the
    /// oldest job. A job taken from a holder that still names itself (it neither finished nor
    /// released the job: it died, or hung past the lease) counts a crash.
    public func claim(owner: String, leaseMilliseconds: Int64, excluding: Set<String>) async throws -> (Job, Lease)? {
        let claimable = JobLifecycle.textArray(from: .claim)
        let passedOver = JobLifecycle.arrayLiteral(excluding.sorted())
        return try await pool.withConnection { connection in
            let rows = try connection.query(
                """
                WITH busy AS (SELECT owner, count(*) AS running FROM jobs
                              WHERE type <> 'upload' AND state = 'running' AND lease_expires_at >= now()
                              GROUP BY owner),
                     pick AS (SELECT j.id AS pick_id FROM jobs j LEFT JOIN busy b ON b.owner = j.owner
                              WHERE j.type <> 'upload'
                                AND (j.state = ANY(\(claimable)::text[]) OR (j.state = 'running' AND j.lease_expires_at < now()))
                                AND (j.retry_at IS NULL OR j.retry_at <= now())
                                AND NOT (j.owner = ANY(\(passedOver)::text[]))
                              ORDER BY coalesce(b.running, 0), j.created_at, j.id
                              FOR UPDATE OF j SKIP LOCKED
                              LIMIT 1)
                UPDATE jobs SET crashes = crashes + CASE WHEN state = 'running' AND lease_owner IS NOT NULL THEN 1 ELSE 0 END,
                       state = 'running', lease_owner = \(owner), lease_token = lease_token + 1,
                       lease_expires_at = now() + \(leaseMilliseconds)::bigint * interval '1 millisecond',
                       attempts = attempts + 1, version = version + 1, updated_at = now()
                FROM pick WHERE jobs.id = pick.pick_id
                RETURNING \(Self.columns)
                """)
            guard let row = rows.first else { return nil }
            let job = try Self.decode(row)
            return (
                job,
                Lease(
                    jobID: job.id, owner: owner, token: Int64(try row.int("lease_token")),
                    expiresAt: Int64(try row.int("lease_expires_ms")))
            )
        }
    }

    public func waitingOwners(limit: Int) async throws -> [String] {
        let claimable = JobLifecycle.textArray(from: .claim)
        return try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT DISTINCT owner FROM jobs
                WHERE type <> 'upload' AND (state = ANY(\(claimable)::text[]) OR (state = 'running' AND lease_expires_at < now()))
                  AND (retry_at IS NULL OR retry_at <= now())
                LIMIT \(limit)
                """
            ).map { try $0.string("owner") }
        }
    }

    public func renew(_ lease: Lease, leaseMilliseconds: Int64, flowing: Int64?) async throws -> Lease {
        try await pool.withConnection { connection in
            // With a figure, the row's version moves too (long polls and streams see progress);
            // without, only the lease's end changes, in place (HOT).
            let rows = try connection.query(
                """
                UPDATE jobs SET lease_expires_at = now() + \(leaseMilliseconds)::bigint * interval '1 millisecond',
                       bytes_flowing = coalesce(\(flowing)::bigint, bytes_flowing),
                       version = version + CASE WHEN \(flowing)::bigint IS DISTINCT FROM NULL AND \(flowing)::bigint <> bytes_flowing THEN 1 ELSE 0 END
                WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
                RETURNING (extract(epoch FROM lease_expires_at) * 1000)::bigint AS expires
                """)
            guard let row = rows.first else { throw LeaseLost(jobID: lease.jobID) }
            return Lease(jobID: lease.jobID, owner: lease.owner, token: lease.token, expiresAt: Int64(try row.int("expires")))
        }
    }

    public func release(_ lease: Lease) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE jobs SET lease_expires_at = now() - interval '1 second', lease_owner = NULL,
                       version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
                """)
        }
    }

    public func recordPart(_ part: RecordedPart, under lease: Lease) async throws {
        try await recordParts([part], under: lease)
    }

    /// The parts' rows, and one update of the job's counters for all of them.
    public func recordParts(_ parts: [RecordedPart], under lease: Lease) async throws {
        try await pool.withTransaction { connection in
            try Self.lock(lease, on: connection)
            var delta: Int64 = 0
            for part in parts { delta += part.size - (try Self.upsertPart(part, jobID: lease.jobID, on: connection)) }
            try connection.query(
                """
                UPDATE jobs SET bytes_committed = bytes_committed + \(delta), bytes_transferred = bytes_transferred + \(delta),
                       bytes_at = now(), retries = 0, version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid
                """)
        }
    }

    public func parts(of jobID: String) async throws -> [RecordedPart] {
        try await pool.withConnection { connection in
            try connection.query(
                "SELECT part_number, size, etag, checksum FROM job_parts WHERE job_id = \(jobID)::uuid ORDER BY part_number"
            )
            .map {
                RecordedPart(
                    number: try $0.int("part_number"), size: Int64(try $0.int("size")), etag: try $0.string("etag"),
                    checksum: try $0.optionalString("checksum"))
            }
        }
    }

    public func start(
        _ lease: Lease, uploadID: String?, partChecksum: PartChecksum?, partsTotal: Int, partSize: Int64,
        bytesTotal: Int64?, sourceETag: String?
    ) async throws {
        try await pool.withTransaction { connection in
            try Self.lock(lease, on: connection)
            // Parts of an earlier plan belonged to another upload: their bytes no longer count.
            let dropped = Int64(
                try connection.query(
                    """
                    WITH gone AS (DELETE FROM job_parts WHERE job_id = \(lease.jobID)::uuid RETURNING size)
                    SELECT coalesce(sum(size), 0)::bigint AS bytes FROM gone
                    """
                ).first?.int("bytes") ?? 0)
            try connection.query(
                """
                UPDATE jobs SET upload_id = \(uploadID), part_checksum = \(partChecksum?.rawValue), parts_total = \(partsTotal), part_size = \(partSize),
                       bytes_total = \(bytesTotal), source_etag = \(sourceETag),
                       bytes_committed = bytes_committed - \(dropped), bytes_transferred = bytes_transferred - \(dropped),
                       version = version + 1, updated_at = now()
                WHERE id = \(lease.jobID)::uuid
                """)
        }
    }

    public func beginCompleting(_ lease: Lease) async throws {
        try await writeUnderLease(
            lease,
            """
            UPDATE jobs SET completing = true
            WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
            RETURNING 1 AS ok
            """)
    }

    public func finish(
        _ lease: Lease, state: Job.State, etag: String?, error: JobFailure?, checksum: ObjectChecksum?
    ) async throws {
        let ending = JobLifecycle.ending(state)
        let state = JobLifecycle.target(of: ending)
        let kept = state == .completed ? checksum : nil
        let algorithm = kept?.algorithm.rawValue, value = kept?.value
        // One statement: the job's ending and its object's checksum record commit together.
        try await writeUnderLease(
            lease,
            """
            WITH ended AS (
                UPDATE jobs SET state = \(state.rawValue), etag = \(etag), error = \(JobColumns.json(error))::jsonb, lease_owner = NULL,
                       lease_expires_at = NULL, completed_at = now(), version = version + 1, updated_at = now(),
                       checksum_algorithm = \(algorithm)::text, checksum_value = \(value)::text,
                       bytes_total = CASE WHEN \(state.rawValue) = 'completed' THEN coalesce(bytes_total, bytes_committed)
                                          ELSE bytes_total END
                WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running'
                RETURNING object_key, etag
            ), kept AS (
                INSERT INTO object_checksums (object_key, etag, algorithm, value)
                SELECT object_key, etag, \(algorithm)::text, \(value)::text FROM ended
                WHERE object_key IS NOT NULL AND etag IS NOT NULL AND \(algorithm)::text IS NOT NULL
                ON CONFLICT (object_key, etag) DO UPDATE SET algorithm = EXCLUDED.algorithm, value = EXCLUDED.value,
                                                            recorded_at = now()
            )
            SELECT 1 AS ok FROM ended
            """)
    }

    public func list(owner: String?, state: Job.State?, kind: Job.Kind?, limit: Int, after cursor: String?) async throws -> [Job] {
        try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT \(Self.columns) FROM jobs
                WHERE (\(owner)::text IS NULL OR owner = \(owner))
                  AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
                  AND (\(kind?.rawValue)::text IS NULL OR type = \(kind?.rawValue))
                  AND (\(cursor)::uuid IS NULL OR (created_at, id) < (SELECT created_at, id FROM jobs WHERE id = \(cursor)::uuid))
                ORDER BY created_at DESC, id DESC
                LIMIT \(limit)
                """
            ).map(Self.decode)
        }
    }

    public func transition(id: String, _ action: JobLifecycle.Action) async throws -> Job? {
        let from = JobLifecycle.textArray(from: action), to = JobLifecycle.target(of: action)
        let refusedWhileCompleting = JobLifecycle.refusedWhileCompleting(action)
        return try await pool.withConnection { connection in
            _ = try connection.query(
                """
                UPDATE jobs SET state = \(to.rawValue), version = version + 1, updated_at = now(), retry_at = NULL,
                       completed_at = CASE WHEN \(to.isFinal) THEN now() ELSE completed_at END
                WHERE id = \(id)::uuid AND state = ANY(\(from)::text[]) AND NOT (completing AND \(refusedWhileCompleting))
                """)
            return try connection.query("SELECT \(Self.columns) FROM jobs WHERE id = \(id)::uuid").first.map(Self.decode)
        }
    }

    public func uploadIDsInUse(key: String) async throws -> Set<String> {
        try await pool.withConnection { connection in
            Set(
                try connection.query(
                    """
                    SELECT upload_id AS id FROM jobs
                    WHERE object_key = \(key) AND upload_id IS NOT NULL
                      AND (state = ANY(\(JobLifecycle.textArray(Job.State.active))::text[])
                           OR (state = 'failed' AND coalesce((error->>'retryable')::boolean, false)))
                    UNION SELECT s3_upload_id AS id FROM uploads WHERE object_key = \(key) AND state = 'open' AND s3_upload_id IS NOT NULL
                    """
                ).map { try $0.string("id") })
        }
    }

    // MARK: helpers

    /// Inside a transaction: locks the job row under `lease`'s token (if the job is not ours any
    /// more, nothing is written: `LeaseLost`). Returns the tail's pieces as they were.
    @discardableResult
    static func lock(_ lease: Lease, on connection: PostgresConnection) throws -> [TailSegment] {
        let owned = try connection.query(
            """
            SELECT upload_tail_segments::text AS tail FROM jobs
            WHERE id = \(lease.jobID)::uuid AND lease_token = \(lease.token) AND state = 'running' FOR UPDATE
            """)
        guard let row = owned.first else { throw LeaseLost(jobID: lease.jobID) }
        return try segments(row.string("tail"))
    }

    /// Inserts or replaces the part; returns the size it had before (0 when new).
    static func upsertPart(_ part: RecordedPart, jobID: String, on connection: PostgresConnection) throws -> Int64 {
        let previous =
            try connection.query(
                """
                SELECT size FROM job_parts WHERE job_id = \(jobID)::uuid AND part_number = \(part.number)
                """
            ).first.map { Int64(try $0.int("size")) } ?? 0
        try connection.query(
            """
            INSERT INTO job_parts (job_id, part_number, size, etag, checksum)
            VALUES (\(jobID)::uuid, \(part.number), \(part.size), \(part.etag), \(part.checksum))
            ON CONFLICT (job_id, part_number) DO UPDATE SET size = EXCLUDED.size, etag = EXCLUDED.etag, checksum = EXCLUDED.checksum,
                attempts = job_parts.attempts + 1, completed_at = now()
            """)
        return previous
    }

    static func segments(_ json: String) throws -> [TailSegment] {
        try JSONDecoder().decode([TailSegment].self, from: Data(json.utf8))
    }

    func writeUnderLease(_ lease: Lease, _ sql: SQL) async throws {
        let changed = try await pool.withConnection { try !$0.query(sql).isEmpty }
        if !changed { throw LeaseLost(jobID: lease.jobID) }
    }

    static func decode(_ row: PostgresRow) throws -> Job {
        guard let kind = Job.Kind(rawValue: try row.string("type")), let state = Job.State(rawValue: try row.string("state")) else {
            throw PostgresRow.DecodingError(column: "type/state", expected: "a known value")
        }
        let id = try row.string("id")
        var job = Job(
            id: id, owner: try row.string("owner"), kind: kind, state: state,
            objectKey: try row.optionalString("object_key"),
            source: try JobColumns.source(try row.optionalString("source"), kind: kind, job: id),
            options: try JobColumns.options(try row.string("options"), job: id),
            bytesTotal: try row.optionalInt("bytes_total").map(Int64.init),
            partSize: Int64(try row.int("part_size")))
        job.bytesTransferred = Int64(try row.int("bytes_transferred"))
        job.bytesCommitted = Int64(try row.int("bytes_committed"))
        job.bytesFlowing = Int64(try row.int("bytes_flowing"))
        job.partsTotal = try row.optionalInt("parts_total")
        job.uploadID = try row.optionalString("upload_id")
        job.partChecksum = try row.optionalString("part_checksum").flatMap(PartChecksum.init(rawValue:))
        job.etag = try row.optionalString("etag")
        job.checksum = try JobColumns.checksum(
            algorithm: try row.optionalString("checksum_algorithm"), value: try row.optionalString("checksum_value"))
        job.error = try JobColumns.failure(try row.optionalString("error"), job: id)
        job.attempts = try row.int("attempts")
        job.crashes = try row.int("crashes")
        job.completing = try row.bool("completing")
        job.sourceETag = try row.optionalString("source_etag")
        job.version = Int64(try row.int("version"))
        job.createdAt = Int64(try row.int("created_ms"))
        job.updatedAt = Int64(try row.int("updated_ms"))
        job.completedAt = try row.optionalInt("completed_ms").map(Int64.init)
        job.bytesAt = Int64(try row.int("bytes_ms"))
        job.retryAt = try row.optionalInt("retry_ms").map(Int64.init)
        job.lastError = try JobColumns.failure(try row.optionalString("last_error"), job: id, column: "last_error")
        job.retries = try row.int("retries")
        job.partsCompleted = try row.optionalInt("parts_completed") ?? 0
        return job
    }
}
