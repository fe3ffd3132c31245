import Gateway
import Postgres

/// `WebhookOutbox` over PostgreSQL: the `webhook_events` table, filled by the trigger of
/// migration 7. A claim pushes the events' next attempt a lease ahead in one statement (`SKIP
/// LOCKED`, as job claims do), so two instances never send the same event at once, and an
/// instance that dies holding one lets it fall due again when the lease runs out.
public struct PostgresWebhookOutbox: WebhookOutbox {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func claimDue(limit: Int, leaseSeconds: Int) async throws -> [WebhookEvent] {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE webhook_events SET attempts = attempts + 1,
                       next_attempt_at = clock_timestamp() + make_interval(secs => \(leaseSeconds))
                WHERE id IN (SELECT id FROM webhook_events WHERE state = 'pending' AND next_attempt_at <= clock_timestamp()
                             ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING id::text AS id, type, subject_id::text AS subject, attempts,
                          extract(epoch FROM created_at)::float8::text AS created
                """
            ).map { row in
                WebhookEvent(
                    id: try row.string("id"), type: try row.string("type"), subjectID: try row.string("subject"),
                    attempts: try row.int("attempts"), createdAt: Double(try row.string("created")) ?? 0)
            }
        }
    }

    public func delivered(_ event: WebhookEvent) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE webhook_events SET state = 'delivered', delivered_at = clock_timestamp(), last_error = NULL
                WHERE id = \(event.id)::uuid AND state = 'pending' AND attempts = \(event.attempts)
                """)
        }
    }

    public func retry(_ event: WebhookEvent, afterSeconds seconds: Double, error: String) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE webhook_events SET next_attempt_at = clock_timestamp() + make_interval(secs => \(seconds)),
                       last_error = \(String(error.prefix(500)))
                WHERE id = \(event.id)::uuid AND state = 'pending' AND attempts = \(event.attempts)
                """)
        }
    }

    public func failed(_ event: WebhookEvent, error: String) async throws {
        try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE webhook_events SET state = 'failed', last_error = \(String(error.prefix(500)))
                WHERE id = \(event.id)::uuid AND state = 'pending' AND attempts = \(event.attempts)
                """)
        }
    }

    public func failedCount() async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query("SELECT count(*)::int AS n FROM webhook_events WHERE state = 'failed'").first?.int("n") ?? 0
        }
    }

    /// In batches of 1,000 (short transactions), until fewer than a batch are left.
    public func sweepDelivered(olderThanSeconds seconds: Int) async throws {
        var removed = 1000
        while removed >= 1000 {
            removed = try await pool.withConnection { connection in
                try connection.query(
                    """
                    WITH gone AS (DELETE FROM webhook_events WHERE id IN (
                        SELECT id FROM webhook_events WHERE state = 'delivered'
                           AND created_at < clock_timestamp() - make_interval(secs => \(seconds)) LIMIT 1000)
                        RETURNING 1)
                    SELECT count(*)::int AS n FROM gone
                    """
                ).first?.int("n") ?? 0
            }
        }
    }
}
