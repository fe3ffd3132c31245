import Gateway
import Postgres

/// `IdempotencyStore` over PostgreSQL: the `idempotency_keys` table. A claim is one INSERT that
/// wins or finds the row already there; a key older than its lifetime is taken as new.
public struct PostgresIdempotencyStore: IdempotencyStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func claim(owner: String, scope: String, key: String, fingerprint: String, lifetimeSeconds: Int) async throws -> IdempotencyClaim
    {
        try await pool.withTransaction { connection in
            // Expired keys go first: this identity's, and a few of anyone's, so the table is swept
            // by its own use. A claim whose request died before it answered (no status a minute
            // on) is let go too, or its key would answer 503 for a day.
            try connection.query(
                """
                DELETE FROM idempotency_keys
                WHERE (owner = \(owner) AND created_at < now() - make_interval(secs => \(lifetimeSeconds)))
                   OR (owner = \(owner) AND scope = \(scope) AND key = \(key) AND status IS NULL
                       AND created_at < now() - interval '60 seconds')
                   OR ctid IN (SELECT ctid FROM idempotency_keys
                               WHERE created_at < now() - make_interval(secs => \(lifetimeSeconds)) LIMIT 20)
                """)
            let won = try connection.query(
                """
                INSERT INTO idempotency_keys (owner, scope, key, fingerprint) VALUES (\(owner), \(scope), \(key), \(fingerprint))
                ON CONFLICT DO NOTHING RETURNING 1 AS won
                """)
            if !won.isEmpty { return .claimed }
            guard
                let row = try connection.query(
                    """
                    SELECT fingerprint, status, location, body FROM idempotency_keys
                    WHERE owner = \(owner) AND scope = \(scope) AND key = \(key)
                    """
                ).first
            else { return .inProgress(fingerprint: fingerprint) }
            let first = try row.string("fingerprint")
            guard let status = try row.optionalInt("status") else { return .inProgress(fingerprint: first) }
            let answer = StoredAnswer(
                status: status, location: try row.optionalString("location"), body: try row.optionalBytes("body") ?? [])
            return .answered(answer, fingerprint: first)
        }
    }

    public func record(owner: String, scope: String, key: String, answer: StoredAnswer) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE idempotency_keys SET status = \(answer.status), location = \(answer.location), body = \(PostgresBytes(answer.body))
                WHERE owner = \(owner) AND scope = \(scope) AND key = \(key)
                """)
        }
    }

    public func release(owner: String, scope: String, key: String) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                DELETE FROM idempotency_keys WHERE owner = \(owner) AND scope = \(scope) AND key = \(key) AND status IS NULL
                """)
        }
    }
}
