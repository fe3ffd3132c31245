import PortContracts
import Testing

/// `IdempotencyStoreContract` on `PostgresIdempotencyStore`.
@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"))
struct IdempotencyStoreContractLiveTests {
    @Test(arguments: IdempotencyStoreContract.cases)
    func postgresIdempotencyStore(_ contract: ContractCase<StoreFixture>) async throws {
        try await contract.run { try await LiveContractFixtures.stores(retiring: false) }
    }
}
