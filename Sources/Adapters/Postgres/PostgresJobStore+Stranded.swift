import Postgres
import TransferEngine

extension PostgresJobStore {
    public func strandedCompletions(limit: Int) async throws -> [String] {
        try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT id::text AS id FROM jobs
                WHERE type = 'upload' AND state = 'running' AND completing AND bytes_total IS NOT NULL
                  AND bytes_committed = bytes_total AND lease_expires_at < now()
                ORDER BY lease_expires_at LIMIT \(limit)
                """
            ).map { try $0.string("id") }
        }
    }
}
