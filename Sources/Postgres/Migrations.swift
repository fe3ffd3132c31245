/// Versioned schema migrations, applied in order, each in its own transaction, recorded in
/// `schema_migrations`. A session-level advisory lock makes instances that start at the same
/// time take turns: the second finds the work done.
public struct Migrations: Sendable {
    public struct Migration: Sendable {
        public let version: Int
        public let name: String
        public let statements: [SQL]

        public init(version: Int, name: String, statements: [SQL]) {
            self.version = version
            self.name = name
            self.statements = statements
        }
    }

    /// Arbitrary, fixed: the advisory lock key of TransferGateway's migrations.
    static let lockKey = 7_315_044_201

    public let migrations: [Migration]

    public init(_ migrations: [Migration]) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Applies what is missing; returns the versions applied now.
    @discardableResult
    public func apply(using pool: PostgresPool) async throws -> [Int] {
        try await pool.withConnection { connection in
            try connection.query("SELECT pg_advisory_lock(\(Self.lockKey))")
            defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))") }
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now())
                """)
            let done = Set(try connection.query("SELECT version FROM schema_migrations").map { try $0.int("version") })
            var applied: [Int] = []
            for migration in migrations where !done.contains(migration.version) {
                try connection.execute("BEGIN")
                do {
                    for statement in migration.statements { try connection.query(statement) }
                    try connection.query("INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))")
                    try connection.execute("COMMIT")
                } catch {
                    try? connection.execute("ROLLBACK")
                    throw error
                }
                applied.append(migration.version)
            }
            return applied
        }
    }
}
