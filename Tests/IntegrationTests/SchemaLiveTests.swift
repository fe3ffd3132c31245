import Foundation
import Postgres
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"))
struct SchemaLiveTests {
    @Test func migrationsCreateTheJobTablesAndAreIdempotent() async throws {
        let url = try #require(try Configuration.fromEnvironment(liveEnvironment).databaseURL)
        _ = try await GatewayApp.migrate(databaseURL: url)
        #expect(try await GatewayApp.migrate(databaseURL: url).isEmpty, "a second run applies nothing")
        let tables = try await PostgresPool(url: url, size: 1).withConnection { connection in
            try connection.query(
                "SELECT table_name FROM information_schema.tables WHERE table_name IN ('jobs', 'job_parts', 'schema_migrations')"
            )
            .map { try $0.string("table_name") }
        }
        #expect(Set(tables) == ["jobs", "job_parts", "schema_migrations"])
    }
}
