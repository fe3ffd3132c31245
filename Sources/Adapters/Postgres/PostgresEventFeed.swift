import Foundation
import Gateway
import Postgres
import TransferEngine

/// `EventFeed` over PostgreSQL: the `feed_events` table that the triggers of migration 14 fill
/// (`Schema+EventFeed.swift`). Each event's `snapshot` is the job's or the upload's row as the
/// change left it; it is read back as a row of its table (`jsonb_populate_record`), so the job
/// and upload stores' own column lists and decoders read it. An object change (recorded by the
/// object routes through the same numbering function) keeps its `ObjectChange` as JSON.
public struct PostgresEventFeed: EventFeed {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func events(owner: String, after: Int64, limit: Int) async throws -> [FeedEvent] {
        // Jobs and uploads each need their own table's columns: two reads, each at most `limit`,
        // hold the first `limit` of the two together.
        let found = try await pool.withConnection { connection -> [FeedEvent] in
            let jobs = try connection.query(
                """
                SELECT f.feed_seq, f.feed_type, f.feed_ms, \(PostgresJobStore.columns)
                FROM (SELECT seq AS feed_seq, type AS feed_type, (extract(epoch FROM created_at) * 1000)::bigint AS feed_ms, snapshot
                      FROM feed_events WHERE owner = \(owner) AND seq > \(after) AND starts_with(type, 'job.')
                      ORDER BY seq LIMIT \(limit)) f
                CROSS JOIN LATERAL jsonb_populate_record(NULL::jobs, f.snapshot) AS jobs
                """
            ).map { row in try Self.event(row, .job(try PostgresJobStore.decode(row))) }
            let uploads = try connection.query(
                """
                SELECT f.feed_seq, f.feed_type, f.feed_ms, \(PostgresClientUploadStore.columns)
                FROM (SELECT seq AS feed_seq, type AS feed_type, (extract(epoch FROM created_at) * 1000)::bigint AS feed_ms, snapshot
                      FROM feed_events WHERE owner = \(owner) AND seq > \(after) AND starts_with(type, 'upload.')
                      ORDER BY seq LIMIT \(limit)) f
                CROSS JOIN LATERAL jsonb_populate_record(NULL::uploads, f.snapshot) AS uploads
                """
            ).map { row in try Self.event(row, .upload(try PostgresClientUploadStore.decode(row))) }
            let objects = try connection.query(
                """
                SELECT seq AS feed_seq, type AS feed_type, (extract(epoch FROM created_at) * 1000)::bigint AS feed_ms,
                       snapshot::text AS change
                FROM feed_events WHERE owner = \(owner) AND seq > \(after) AND starts_with(type, 'object.')
                ORDER BY seq LIMIT \(limit)
                """
            ).map { row in
                try Self.event(row, .object(try JSONDecoder().decode(ObjectChange.self, from: Data(try row.string("change").utf8))))
            }
            return jobs + uploads + objects
        }
        return Array(found.sorted { $0.sequence < $1.sequence }.prefix(limit))
    }

    public func record(owner: String, type: String, change: ObjectChange) async throws {
        let snapshot = String(decoding: try JSONEncoder().encode(change), as: UTF8.self)
        try await pool.withTransaction { connection in
            try connection.query("SELECT gateway_feed_record(\(owner), \(type), gen_random_uuid(), \(snapshot)::jsonb)")
        }
    }

    public func latest(owner: String) async throws -> Int64 {
        try await pool.withConnection { connection in
            Int64(try connection.query("SELECT seq FROM feed_sequences WHERE owner = \(owner)").first?.int("seq") ?? 0)
        }
    }

    /// In batches of 1,000 (short transactions), until fewer than a batch are left; the
    /// progress marks of subjects quiet that long go too. The counter rows stay: numbers are
    /// never given twice.
    @discardableResult
    public func sweep(olderThanSeconds seconds: Int) async throws -> Int {
        var total = 0, removed = 1000
        while removed >= 1000 {
            removed = try await pool.withConnection { connection in
                try connection.query(
                    """
                    WITH gone AS (DELETE FROM feed_events WHERE ctid IN (
                        SELECT ctid FROM feed_events WHERE created_at < clock_timestamp() - make_interval(secs => \(seconds)) LIMIT 1000)
                        RETURNING 1)
                    SELECT count(*)::int AS n FROM gone
                    """
                ).first?.int("n") ?? 0
            }
            total += removed
        }
        try await pool.withConnection { connection in
            try connection.query("DELETE FROM feed_progress WHERE at < clock_timestamp() - make_interval(secs => \(seconds))")
        }
        return total
    }

    private static func event(_ row: PostgresRow, _ subject: FeedEvent.Subject) throws -> FeedEvent {
        FeedEvent(
            sequence: Int64(try row.int("feed_seq")), type: try row.string("feed_type"), createdAt: Int64(try row.int("feed_ms")),
            subject: subject)
    }
}
