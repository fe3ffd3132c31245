import PortContracts
import Testing

/// `EventFeedContract` on `PostgresEventFeed`, its events recorded by the triggers of migration 14.
@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"))
struct EventFeedContractLiveTests {
    @Test(arguments: EventFeedContract.cases)
    func postgresEventFeed(_ contract: ContractCase<EventFeedFixture>) async throws {
        try await contract.run { try await LiveContractFixtures.eventFeed() }
    }
}
