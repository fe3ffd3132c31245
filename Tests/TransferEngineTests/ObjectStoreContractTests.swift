import PortContracts
import Testing

/// `ObjectStoreContract` on the twin, `InMemoryObjectStore`; IntegrationTests runs the same
/// cases on `S3ObjectStore` against SeaweedFS.
@Suite struct ObjectStoreContractTests {
    @Test(arguments: ObjectStoreContract.cases)
    func inMemoryObjectStore(_ contract: ContractCase<ObjectStoreFixture>) async throws {
        try await contract.run { ObjectStoreFixture.inMemory() }
    }
}
