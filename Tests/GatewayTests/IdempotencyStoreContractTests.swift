import PortContracts
import Testing

/// `IdempotencyStoreContract` on the twin, `InMemoryIdempotencyStore` on a manual clock;
/// IntegrationTests runs the same cases on PostgreSQL.
@Suite struct IdempotencyStoreContractTests {
    @Test(arguments: IdempotencyStoreContract.cases)
    func inMemoryIdempotencyStore(_ contract: ContractCase<StoreFixture>) async throws {
        try await contract.run { StoreFixture.inMemory() }
    }
}
