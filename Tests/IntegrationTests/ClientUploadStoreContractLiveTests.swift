import PortContracts
import Testing

extension JobTableTests {
    /// `ClientUploadStoreContract` on `PostgresClientUploadStore` (and the job store beside it):
    /// inside `JobTableTests` too, since the suites there retire every active job, and upload
    /// jobs are among what its cases count.
    @Suite struct ClientUploadStoreContractLiveTests {
        @Test(arguments: ClientUploadStoreContract.cases)
        func postgresClientUploadStore(_ contract: ContractCase<StoreFixture>) async throws {
            try await contract.run { try await LiveContractFixtures.stores(retiring: false) }
        }
    }
}
