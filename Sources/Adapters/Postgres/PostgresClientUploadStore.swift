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
        extract(epoch FROM created_at)::float8::text AS created
        """)

    public func begin(_ upload: ClientUpload, quota: OwnerQuota) async throws {
        try await pool.withTransaction { connection in
            try OwnerLimits.check(quota, owner: upload.owner, creating: .clientUpload, on: connection)
            try connection.query(
                """
                INSERT INTO uploads (id, owner, object_key, s3_upload_id, size, part_size, part_count, state)
                VALUES (\(upload.id)::uuid, \(upload.owner), \(upload.objectKey), NULL, \(upload.size), \(upload.partSize),
                        \(upload.partCount), 'creating')
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

    public func completed(id: String, etag: String) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE uploads SET state = 'completed', etag = \(etag), completed_at = now()
                WHERE id = \(id)::uuid AND state = 'completing'
                """)
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
            etag: try row.optionalString("etag"), createdAt: Double(try row.string("created")) ?? 0)
    }
}
