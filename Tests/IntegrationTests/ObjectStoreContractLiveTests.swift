import PortContracts
import Testing

/// `ObjectStoreContract` on `S3ObjectStore` against SeaweedFS, under `tests/port-contracts/`.
@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"))
struct ObjectStoreContractLiveTests {
    @Test(arguments: ObjectStoreContract.cases)
    func s3ObjectStore(_ contract: ContractCase<ObjectStoreFixture>) async throws {
        try await contract.run { try LiveContractFixtures.objects() }
    }
}
