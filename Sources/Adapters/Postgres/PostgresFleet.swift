import Foundation
import Gateway
import Postgres
import Synchronization

/// The deployment as PostgreSQL sees it: this instance's row in `instances` (a heartbeat every
/// `beatSeconds`), the per-identity counts every instance shares (`identity_rates`,
/// `identity_holds`), and the settings made once for all (`gateway_settings`: the link secret).
///
/// A hold counts while its instance is live (a heartbeat within `liveSeconds`) or is this one,
/// so the holds of an instance that was killed stop counting by themselves, and are swept.
public final class PostgresFleet: SharedLimits, InstanceDirectory {
    let pool: PostgresPool
    public let current: InstanceRecord
    private let left = Atomic<Bool>(false)
    /// The holds this instance has taken and not given back: a row whose delete failed (the
    /// database away for a moment) is swept by the next `sweep`, not kept while we live.
    private let held = Mutex<Set<String>>([])
    /// Seconds between heartbeats.
    public static let beatSeconds = 5
    /// A heartbeat older than this and the instance counts as gone.
    public static let liveSeconds = 20
    /// Instances gone longer than this are no longer listed.
    static let keptSeconds = 86_400

    public init(pool: PostgresPool, current: InstanceRecord) {
        self.pool = pool
        self.current = current
    }

    // MARK: heartbeat

    /// Writes this instance's row, or renews its heartbeat.
    public func beat() async throws {
        let me = current
        let settings = String(decoding: try JSONEncoder().encode(me.settings), as: UTF8.self)
        try await pool.withConnection { connection in
            try connection.query(
                """
                INSERT INTO instances (id, host, version, schema_version, settings_hash, settings)
                VALUES (\(me.id), \(me.host), \(me.version), \(me.schemaVersion), \(me.settingsHash), \(settings)::jsonb)
                ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp()
                """)
        }
    }

    /// Beats every `beatSeconds` and sweeps every minute, until the task is cancelled.
    public func run() async {
        var beats = 0
        while !Task.isCancelled && !left.load(ordering: .acquiring) {
            try? await beat()
            if beats % 12 == 0 { try? await sweep() }
            beats += 1
            try? await Task.sleep(for: .seconds(Self.beatSeconds))
        }
    }

    /// This instance leaves (a clean shutdown): its row and holds go at once.
    public func leave() async {
        left.store(true, ordering: .releasing)
        let id = current.id
        _ = try? await pool.withTransaction { connection in
            try connection.query("DELETE FROM identity_holds WHERE instance_id = \(id)")
            try connection.query("DELETE FROM instances WHERE id = \(id)")
        }
    }

    /// Holds of instances gone and this instance's own given back whose row stayed, buckets
    /// idle for minutes, instances gone for a day.
    func sweep() async throws {
        let me = current.id
        let kept = "{" + held.withLock { $0.sorted() }.joined(separator: ",") + "}"
        try await pool.withConnection { connection in
            // Rows a few seconds old only: a hold taken while `kept` was read is not in it yet.
            try connection.query(
                """
                DELETE FROM identity_holds WHERE instance_id = \(me) AND NOT (id = ANY(\(kept)::uuid[]))
                    AND created_at < clock_timestamp() - interval '5 seconds'
                """)
            try connection.query(
                """
                DELETE FROM identity_holds h WHERE NOT EXISTS (
                    SELECT 1 FROM instances i WHERE i.id = h.instance_id
                    AND i.heartbeat_at > clock_timestamp() - make_interval(secs => \(Self.liveSeconds)))
                """)
            try connection.query("DELETE FROM identity_rates WHERE at < clock_timestamp() - interval '10 minutes'")
            try connection.query(
                "DELETE FROM instances WHERE heartbeat_at < clock_timestamp() - make_interval(secs => \(Self.keptSeconds))")
        }
    }

    // MARK: InstanceDirectory

    public func instances() async throws -> [InstanceRecord] {
        let rows = try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT id, host, version, schema_version, settings_hash, settings::text AS settings,
                    extract(epoch FROM started_at)::bigint AS started, extract(epoch FROM heartbeat_at)::bigint AS beat,
                    heartbeat_at > clock_timestamp() - make_interval(secs => \(Self.liveSeconds)) AS live
                FROM instances
                WHERE heartbeat_at > clock_timestamp() - make_interval(secs => \(Self.keptSeconds))
                ORDER BY started_at, id
                """)
        }
        return try rows.map { row in
            let settings = try JSONDecoder().decode([String: String].self, from: Data(try row.string("settings").utf8))
            return InstanceRecord(
                id: try row.string("id"), host: try row.string("host"), version: try row.string("version"),
                schemaVersion: try row.int("schema_version"), settingsHash: try row.string("settings_hash"), settings: settings,
                startedAt: try row.int("started"), heartbeatAt: try row.int("beat"), live: try row.bool("live"))
        }
    }

    // MARK: SharedLimits

    public func takeCreation(_ identity: String, perSecond: Double, burst: Double) async throws -> Int? {
        // One row per identity, locked by the upsert: concurrent takers on any instance queue on it.
        let row = try await pool.withConnection { connection in
            try connection.query(
                """
                WITH refill AS (SELECT \(perSecond)::float8 AS rate, \(burst)::float8 AS burst)
                INSERT INTO identity_rates AS r (identity, tokens, at, granted)
                SELECT \(identity), refill.burst - 1, clock_timestamp(), true FROM refill
                ON CONFLICT (identity) DO UPDATE SET
                    granted = least(\(burst)::float8, r.tokens + greatest(0, extract(epoch FROM clock_timestamp() - r.at)) * \(perSecond)::float8) >= 1,
                    tokens = least(\(burst)::float8, r.tokens + greatest(0, extract(epoch FROM clock_timestamp() - r.at)) * \(perSecond)::float8)
                        - CASE WHEN least(\(burst)::float8, r.tokens + greatest(0, extract(epoch FROM clock_timestamp() - r.at)) * \(perSecond)::float8) >= 1
                          THEN 1 ELSE 0 END,
                    at = clock_timestamp()
                RETURNING granted, ceil(greatest(0, 1 - tokens) / \(perSecond)::float8)::int AS wait
                """
            ).first
        }
        guard let row, try !row.bool("granted") else { return nil }
        return max(1, try row.int("wait"))
    }

    public func hold(_ kind: SharedHold.Kind, for identity: String, limit: Int) async throws -> SharedHold? {
        let me = current.id
        let lockKey = "\(kind.rawValue):\(identity)"
        let id = try await pool.withTransaction { connection -> String? in
            // Takers of one identity's holds take turns, so two instances cannot both take the last.
            try connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(lockKey), 7315044201))")
            return try connection.query(
                """
                INSERT INTO identity_holds (identity, kind, instance_id)
                SELECT \(identity), \(kind.rawValue), \(me)
                WHERE (SELECT count(*) FROM identity_holds h LEFT JOIN instances i ON i.id = h.instance_id
                       WHERE h.identity = \(identity) AND h.kind = \(kind.rawValue)
                         AND (h.instance_id = \(me)
                              OR i.heartbeat_at > clock_timestamp() - make_interval(secs => \(Self.liveSeconds)))) < \(limit)
                RETURNING id::text AS id
                """
            ).first.map { try $0.string("id") }
        }
        guard let id else { return nil }
        held.withLock { _ = $0.insert(id) }
        return SharedHold(id: id, kind: kind)
    }

    public func release(_ hold: SharedHold) async {
        held.withLock { _ = $0.remove(hold.id) }
        _ = try? await pool.withConnection { connection in
            try connection.query("DELETE FROM identity_holds WHERE id = \(hold.id)::uuid")
        }
    }

    // MARK: settings made once

    /// The deployment's link secret, made now if there is none yet (`migrate`).
    public static func linkSecret(pool: PostgresPool, fresh: String) async throws -> String {
        try await pool.withConnection { connection in
            // The upsert's no-op update makes RETURNING give the kept row when there is one.
            let row = try connection.query(
                """
                INSERT INTO gateway_settings (name, value) VALUES ('link_secret', \(fresh))
                ON CONFLICT (name) DO UPDATE SET value = gateway_settings.value RETURNING value
                """)
            return try row.first?.string("value") ?? fresh
        }
    }

    /// The newest schema version the database has (0: none).
    public static func schemaVersion(pool: PostgresPool) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query("SELECT coalesce(max(version), 0)::int AS version FROM schema_migrations").first?.int("version") ?? 0
        }
    }
}
