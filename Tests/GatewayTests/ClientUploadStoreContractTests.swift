import PortContracts
import Testing

/// `ClientUploadStoreContract` on the twin, `InMemoryClientUploadStore` (linked to the job
/// store's twin); IntegrationTests runs the same cases on PostgreSQL.
@Suite struct ClientUploadStoreContractTests {
    @Test(arguments: ClientUploadStoreContract.cases)
    func inMemoryClientUploadStore(_ contract: ContractCase<StoreFixture>) async throws {
        try await contract.run { StoreFixture.inMemory() }
    }
}
