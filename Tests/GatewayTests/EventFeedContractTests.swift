import PortContracts
import Testing

/// `EventFeedContract` on the twin, `InMemoryEventFeed` on a manual clock; IntegrationTests runs
/// the same cases on PostgreSQL.
@Suite struct EventFeedContractTests {
    @Test(arguments: EventFeedContract.cases)
    func inMemoryEventFeed(_ contract: ContractCase<EventFeedFixture>) async throws {
        try await contract.run { EventFeedFixture.inMemory() }
    }
}
