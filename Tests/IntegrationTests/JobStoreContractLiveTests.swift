import PortContracts
import Testing

extension JobTableTests {
    /// `JobStoreContract` on `PostgresJobStore`: one case at a time, inside `JobTableTests`, with
    /// every other active job retired first (a claim takes the oldest runnable job of the table).
    @Suite struct JobStoreContractLiveTests {
        @Test(arguments: JobStoreContract.cases)
        func postgresJobStore(_ contract: ContractCase<StoreFixture>) async throws {
            try await contract.run { try await LiveContractFixtures.stores(retiring: true) }
        }
    }
}
