import Foundation
import Testing

@testable import Adapters
@testable import Postgres
@testable import TransferGateway

/// Against the PostgreSQL started by scripts/stack.sh (GATEWAY_LIVE_TESTS=1).
private let databaseURL = liveEnvironment["GATEWAY_DATABASE_URL"] ?? ""
private let postgresLive = liveTestsEnabled && !databaseURL.isEmpty

@Suite(.enabled(if: postgresLive, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"), .serialized)
struct PostgresLiveTests {
    @Test func parametersAreBoundNotPasted() async throws {
        let pool = PostgresPool(url: databaseURL, size: 2)
        let hostile = "x'); DROP TABLE pg_class; --"
        let rows = try await pool.withConnection {
            try $0.query("SELECT \(hostile)::text AS v, \(42) AS n, \(true) AS b, \(nil as String?)::text AS z")
        }
        #expect(try rows[0].string("v") == hostile)
        #expect(try rows[0].int("n") == 42)
        #expect(try rows[0].bool("b"))
        #expect(rows[0].isNull("z"))
        let sql: SQL = "SELECT \(hostile) = \(hostile) AS same"
        #expect(sql.text == "SELECT $1 = $2 AS same" && sql.parameters.count == 2)
    }

    @Test func transactionsRollBackWhenWorkThrows() async throws {
        let pool = PostgresPool(url: databaseURL, size: 1)
        let table = "t_\(UUID().uuidString.prefix(8).lowercased())"
        struct Boom: Error {}
        try await pool.withConnection { try $0.query(SQL(stringLiteral: "CREATE TABLE \(table) (v int)")) }
        await #expect(throws: Boom.self) {
            try await pool.withTransaction { connection in
                try connection.query(SQL(stringLiteral: "INSERT INTO \(table) VALUES (1)"))
                throw Boom()
            }
        }
        let count = try await pool.withConnection { try $0.query(SQL(stringLiteral: "SELECT count(*) AS c FROM \(table)"))[0].int("c") }
        #expect(count == 0)
        try await pool.withConnection { try $0.query(SQL(stringLiteral: "DROP TABLE \(table)")) }
    }

    @Test func aPoolOfTwoServesManyTasks() async throws {
        let pool = PostgresPool(url: databaseURL, size: 2)
        let pids = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<40 {
                group.addTask { try await pool.withConnection { try $0.query("SELECT pg_backend_pid() AS pid, \(i) AS i")[0].int("pid") } }
            }
            var all = Set<Int>()
            for try await pid in group { all.insert(pid) }
            return all
        }
        #expect(pids.count <= 2)
    }

    @Test func aKilledConnectionIsReplaced() async throws {
        let pool = PostgresPool(url: databaseURL, size: 1)
        let killer = PostgresPool(url: databaseURL, size: 1)
        let pid = try await pool.withConnection { try $0.query("SELECT pg_backend_pid() AS pid")[0].int("pid") }
        try await killer.withConnection { try $0.query("SELECT pg_terminate_backend(\(pid))") }
        // The next use may fail on the dead connection; the one after works on a new one.
        _ = try? await pool.withConnection { try $0.query("SELECT 1") }
        let newPid = try await pool.withConnection { try $0.query("SELECT pg_backend_pid() AS pid")[0].int("pid") }
        #expect(newPid != pid)
    }

    @Test func migrationsApplyOnceEvenWhenTwoInstancesStartTogether() async throws {
        let table = "m_\(UUID().uuidString.prefix(8).lowercased())"
        let version = Int.random(in: 1_000_000...9_000_000)
        let migrations = Migrations([
            .init(version: version, name: "create \(table)", statements: [SQL(stringLiteral: "CREATE TABLE \(table) (v int)")]),
            .init(version: version + 1, name: "seed \(table)", statements: [SQL(stringLiteral: "INSERT INTO \(table) VALUES (1)")]),
        ])
        let a = PostgresPool(url: databaseURL, size: 1)
        let b = PostgresPool(url: databaseURL, size: 1)
        async let first = migrations.apply(using: a)
        async let second = migrations.apply(using: b)
        let applied = try await [first, second]
        #expect(applied.flatMap { $0 }.sorted() == [version, version + 1], "each migration applied exactly once")
        let rows = try await a.withConnection { try $0.query(SQL(stringLiteral: "SELECT count(*) AS c FROM \(table)"))[0].int("c") }
        #expect(rows == 1)
        try await a.withConnection { connection in
            try connection.query(SQL(stringLiteral: "DROP TABLE \(table)"))
            try connection.query("DELETE FROM schema_migrations WHERE version IN (\(version), \(version + 1))")
        }
    }
}
