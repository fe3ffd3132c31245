import Postgres

extension Schema {
    /// Migration 17: leases on object keys for the gateway's conditional writes (`KeyLocks`),
    /// shared by every instance. A row is a held key; one past `expires_at` is free to take.
    static let keyLocks = Migrations.Migration(
        version: 17, name: "key locks for conditional writes",
        statements: [
            """
            CREATE TABLE key_locks (
                key text PRIMARY KEY,
                holder text NOT NULL,
                expires_at timestamptz NOT NULL)
            """
        ])
}
