import Postgres
import TransferEngine

/// `ObjectChecksumStore` over the `object_checksums` table (`Schema+Checksums.swift`). Jobs
/// write their records as they complete (`PostgresJobStore.finish`); client uploads through
/// `record`.
public struct PostgresObjectChecksums: ObjectChecksumStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func checksum(ofKey key: String, etag: String) async throws -> ObjectChecksum? {
        try await pool.withConnection { connection in
            let rows = try connection.query(
                "SELECT algorithm, value FROM object_checksums WHERE object_key = \(key) AND etag = \(etag)")
            guard let row = rows.first else { return nil }
            return try JobColumns.checksum(algorithm: try row.optionalString("algorithm"), value: try row.optionalString("value"))
        }
    }

    public func record(_ checksum: ObjectChecksum, key: String, etag: String) async throws {
        _ = try await pool.withConnection { connection in
            try connection.query(
                """
                INSERT INTO object_checksums (object_key, etag, algorithm, value)
                VALUES (\(key), \(etag), \(checksum.algorithm.rawValue), \(checksum.value))
                ON CONFLICT (object_key, etag) DO UPDATE SET algorithm = EXCLUDED.algorithm, value = EXCLUDED.value,
                                                            recorded_at = now()
                """)
        }
    }
}
