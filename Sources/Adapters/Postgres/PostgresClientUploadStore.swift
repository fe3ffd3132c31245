import Gateway
import Postgres
import TransferEngine

/// `ClientUploadStore` over PostgreSQL: the `uploads` table.
public struct PostgresClientUploadStore: ClientUploadStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    static let columns = SQLFragment(
        """
        id::text AS id, owner, object_key, s3_upload_id, size, part_size, part_count, state, etag,
        part_checksum, checksum_algorithm, checksum_value,
        extract(epoch FROM created_at)::float8::text AS created
        """)

    public func begin(_ upload: ClientUpload, quota: OwnerQuota) async throws {
        try await pool.withTransaction { connection in
            try OwnerLimits.check(quota, owner: upload.owner, creating: .clientUpload, on: connection)
            try connection.query(
                """
                INSERT INTO uploads (id, owner, object_key, s3_upload_id, size, part_size, part_count, state, part_checksum)
                VALUES (\(upload.id)::uuid, \(upload.owner), \(upload.objectKey), NULL, \(upload.size), \(upload.partSize),
                        \(upload.partCount), 'creating', \(upload.partChecksum?.rawValue))
                """)
        }
    }

    public func opened(id: String, s3UploadID: String) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE uploads SET s3_upload_id = \(s3UploadID), state = 'open', touched_at = now() WHERE id = \(id)::uuid
                """)
        }
    }

    public func upload(id: String) async throws -> ClientUpload? {
        try await pool.withConnection { connection in
            try connection.query("SELECT \(Self.columns) FROM uploads WHERE id = \(id)::uuid").first.map(Self.decode)
        }
    }

    public func open(owner: String, limit: Int, after cursor: String?) async throws -> [ClientUpload] {
        try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT \(Self.columns) FROM uploads
                WHERE owner = \(owner) AND state = 'open'
                  AND (\(cursor)::uuid IS NULL OR (created_at, id) < (SELECT created_at, id FROM uploads WHERE id = \(cursor)::uuid))
                ORDER BY created_at DESC, id DESC
                LIMIT \(limit)
                """
            ).map(Self.decode)
        }
    }

    public func touch(id: String) async throws {
        try await pool.withConnection { connection in
            try connection.query("UPDATE uploads SET touched_at = now() WHERE id = \(id)::uuid")
        }
    }

    public func claim(id: String, for state: ClientUpload.State) async throws -> Bool {
        try await pool.withConnection { connection in
            !(try connection.query(
                """
                UPDATE uploads SET state = \(state.rawValue), touched_at = now()
                WHERE id = \(id)::uuid
                  AND (state = 'open'
                       OR (state = \(state.rawValue) AND touched_at < now() - make_interval(secs => \(ClientUpload.staleClaimSeconds))))
                RETURNING 1 AS ok
                """)).isEmpty
        }
    }

    public func unclaim(id: String) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE uploads SET state = 'open', touched_at = now() WHERE id = \(id)::uuid AND state IN ('completing', 'aborting')
                """)
        }
    }

    public func completed(id: String, etag: String, checksum: ObjectChecksum?) async throws {
        let algorithm = checksum?.algorithm.rawValue, value = checksum?.value
        try await pool.withConnection { connection in
            // The upload's ending and its object's checksum record commit together.
            try connection.query(
                """
                WITH ended AS (
                    UPDATE uploads SET state = 'completed', etag = \(etag), completed_at = now(),
                           checksum_algorithm = \(algorithm)::text, checksum_value = \(value)::text
                    WHERE id = \(id)::uuid AND state = 'completing'
                    RETURNING object_key, etag
                )
                INSERT INTO object_checksums (object_key, etag, algorithm, value)
                SELECT object_key, etag, \(algorithm)::text, \(value)::text FROM ended WHERE \(algorithm)::text IS NOT NULL
                ON CONFLICT (object_key, etag) DO UPDATE SET algorithm = EXCLUDED.algorithm, value = EXCLUDED.value,
                                                            recorded_at = now()
                """)
        }
    }

    public func signed(id: String, partChecksums: [(part: Int, checksum: String)]) async throws {
        guard !partChecksums.isEmpty else { return }
        // Bound as two array literals (each element quoted and escaped), unnested into rows. A
        // part keeps at most `ClientUpload.checksumsKeptPerPart` different checksums: past one
        // it is ambiguous for good, so signing it again and again adds no rows.
        let parts = JobLifecycle.arrayLiteral(partChecksums.map { String($0.part) })
        let checksums = JobLifecycle.arrayLiteral(partChecksums.map(\.checksum))
        let kept = ClientUpload.checksumsKeptPerPart
        try await pool.withConnection { connection in
            try connection.query(
                """
                INSERT INTO upload_part_checksums (upload_id, part_number, checksum)
                SELECT \(id)::uuid, p, c FROM unnest(\(parts)::integer[], \(checksums)::text[]) AS s(p, c)
                WHERE (SELECT count(*) FROM upload_part_checksums k WHERE k.upload_id = \(id)::uuid AND k.part_number = s.p) < \(kept)
                ON CONFLICT DO NOTHING
                """)
        }
    }

    public func signedChecksums(id: String) async throws -> [Int: Set<String>] {
        try await pool.withConnection { connection in
            var found: [Int: Set<String>] = [:]
            for row in try connection.query(
                "SELECT part_number, checksum FROM upload_part_checksums WHERE upload_id = \(id)::uuid")
            {
                found[try row.int("part_number"), default: []].insert(try row.string("checksum"))
            }
            return found
        }
    }

    @discardableResult
    public func aborted(id: String) async throws -> Bool {
        try await pool.withConnection { connection in
            !(try connection.query(
                """
                UPDATE uploads SET state = 'aborted', completed_at = now()
                WHERE id = \(id)::uuid AND state IN ('open', 'creating', 'aborting', 'completing')
                RETURNING 1 AS ok
                """)).isEmpty
        }
    }

    public func idle(since cutoff: Double, prefixes: [String]) async throws -> [ClientUpload] {
        try await pool.withConnection { connection in
            try prefixes.flatMap { prefix in
                try connection.query(
                    """
                    SELECT \(Self.columns) FROM uploads
                    WHERE state IN ('open', 'creating', 'completing', 'aborting') AND starts_with(object_key, \(prefix))
                      AND coalesce(touched_at, created_at) <= to_timestamp(\(cutoff))
                    """
                ).map(Self.decode)
            }
        }
    }

    static func decode(_ row: PostgresRow) throws -> ClientUpload {
        guard let state = ClientUpload.State(rawValue: try row.string("state")) else {
            throw PostgresRow.DecodingError(column: "state", expected: "a known upload state")
        }
        return ClientUpload(
            id: try row.string("id"), owner: try row.string("owner"), objectKey: try row.string("object_key"),
            s3UploadID: try row.optionalString("s3_upload_id"), size: Int64(try row.int("size")),
            partSize: Int64(try row.int("part_size")), partCount: try row.int("part_count"), state: state,
            etag: try row.optionalString("etag"), createdAt: Double(try row.string("created")) ?? 0,
            partChecksum: try row.optionalString("part_checksum").flatMap(PartChecksum.init(rawValue:)),
            checksum: try JobColumns.checksum(
                algorithm: try row.optionalString("checksum_algorithm"), value: try row.optionalString("checksum_value")))
    }
}
