import Foundation
import Postgres
import Testing

@testable import Adapters
@testable import Gateway
@testable import TransferGateway

/// Every suite that claims jobs runs inside this one, one test at a time: claims take the
/// oldest runnable job in the table, so two suites claiming at once would take each other's.
@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"), .serialized)
struct JobTableTests {
    /// Leftovers of an earlier, interrupted run are retired so they cannot be claimed.
    static func retireLeftovers(_ pool: PostgresPool) async throws {
        try await pool.withConnection {
            try $0.query("UPDATE jobs SET state = 'canceled' WHERE state IN ('queued', 'running', 'pending', 'paused')")
        }
    }
}
