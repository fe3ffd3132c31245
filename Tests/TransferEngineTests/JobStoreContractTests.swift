import PortContracts
import Testing

/// `JobStoreContract` on the twin, `InMemoryJobStore` (linked to its client-upload twin, as
/// PostgreSQL's tables share a database); IntegrationTests runs the same cases on PostgreSQL.
@Suite struct JobStoreContractTests {
    @Test(arguments: JobStoreContract.cases)
    func inMemoryJobStore(_ contract: ContractCase<StoreFixture>) async throws {
        try await contract.run { StoreFixture.inMemory() }
    }
}
