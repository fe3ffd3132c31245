import Foundation
import Postgres
import TransferEngine

/// `KeyLocks` over PostgreSQL: a key is held by its row in `key_locks`, taken with one upsert
/// that wins when there is no row or the row's lease has lapsed. A waiter asks again with a
/// growing pause (20 ms to 500 ms) and gives up when an ask sent a lease after it began to wait
/// still finds the key held; no connection is held while a key is.
public struct PostgresKeyLocks: KeyLocks {
    let pool: PostgresPool
    let lease: Double

    public init(pool: PostgresPool, lease: Double = KeyLockToken.lease) {
        self.pool = pool
        self.lease = lease
    }

    public func lock(_ key: String) async throws -> KeyLockToken {
        let token = KeyLockToken(key: key, holder: UUID().uuidString)
        let until = ContinuousClock.now + .seconds(lease)
        var pause = 0.02
        while true {
            // Only an ask sent after the lease's length proves a live holder: one sent before it
            // may come back after it (a slow answer) without having seen a dead holder's lapse.
            let asked = ContinuousClock.now
            if try await take(token) { return token }
            guard asked < until else { throw TransferError(code: .storageUnavailable, retryable: true) }
            try await Task.sleep(for: .seconds(pause))
            pause = min(0.5, pause * 2)
        }
    }

    private func take(_ token: KeyLockToken) async throws -> Bool {
        let (key, holder, lease) = (token.key, token.holder, lease)
        return try await pool.withConnection { connection in
            try !connection.query(
                """
                INSERT INTO key_locks (key, holder, expires_at)
                VALUES (\(key), \(holder), clock_timestamp() + make_interval(secs => \(lease)))
                ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                WHERE key_locks.expires_at < clock_timestamp()
                RETURNING 1 AS won
                """
            ).isEmpty
        }
    }

    public func unlock(_ token: KeyLockToken) async {
        let (key, holder) = (token.key, token.holder)
        // A release that never reaches PostgreSQL lapses with the lease.
        _ = try? await pool.withConnection { connection in
            try connection.query("DELETE FROM key_locks WHERE key = \(key) AND holder = \(holder)")
        }
    }
}
