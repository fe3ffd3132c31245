import Foundation
import Gateway
import S3
import SigV4
import Synchronization
import TestSupport
import Testing

@testable import Adapters

/// `CredentialsRefresher` on a manual clock: when it fetches, what it hands on, and what it
/// keeps and says when the provider fails.
@Suite struct CredentialsRefresherTests {
    /// A provider that hands out credentials lasting `lifetime` seconds, or fails while `down`.
    final class Provider: Sendable {
        struct State {
            var fetchedAt: [Int] = []
            var used: [String] = []
            var down = false
        }
        let clock: ManualClock
        let lifetime: Int
        let state = Mutex(State())

        init(clock: ManualClock, lifetime: Int) {
            self.clock = clock
            self.lifetime = lifetime
        }

        func fetch() throws -> Credentials {
            let now = clock.now() / 1000
            let down = state.withLock { s in
                s.fetchedAt.append(now)
                return s.down
            }
            if down { throw CredentialsFetcher.Failure("the stand-in did not answer (Connect)") }
            return Credentials(
                accessKeyID: "KEY\(now)", secretAccessKey: "SECRET-\(now)", sessionToken: "TOKEN-\(now)", expiration: now + lifetime)
        }

        func refresher(_ logs: MemorySink) -> CredentialsRefresher {
            CredentialsRefresher(
                sourceName: "container", fetch: { try self.fetch() }, use: { c in self.state.withLock { $0.used.append(c.accessKeyID) } },
                logger: Logger(level: .info, sink: logs), clock: clock)
        }
    }

    /// Advances `clock` a second at a time for `seconds`, each step once `refresher` has done
    /// the fetch that was due (its next one lies ahead), however slowly the machine runs. The
    /// wait gives up after 50,000 looks (10 s at the least), counted rather than timed: a suite
    /// that keeps every thread busy for 10 s starves this loop and the refresher alike, and a
    /// timed wait would then step past the fetch the refresher had not had a turn to make.
    func pass(_ seconds: Int, on clock: ManualClock, _ refresher: CredentialsRefresher) async throws {
        for _ in 0..<seconds {
            var looks = 0
            while let next = refresher.snapshot.nextFetch, next <= clock.now() / 1000, looks < 50_000 {
                looks += 1
                try await Task.sleep(for: .microseconds(200))
            }
            clock.advance(by: 1000)
        }
    }

    @Test func twoMinuteCredentialsAreRefreshedEveryMinuteInTheBackground() async throws {
        let clock = ManualClock(start: 1_000_000)
        let provider = Provider(clock: clock, lifetime: 120)
        let logs = MemorySink()
        let refresher = provider.refresher(logs)
        #expect(refresher.problem() == "none yet from container (0 failed tries)")
        let task = Task { await refresher.run() }
        try await pass(185, on: clock, refresher)
        task.cancel()
        let state = provider.state.withLock { $0 }
        #expect(state.fetchedAt == [1000, 1060, 1120, 1180])
        #expect(state.used == ["KEY1000", "KEY1060", "KEY1120", "KEY1180"])
        #expect(refresher.problem() == nil)
        #expect(logs.all.count == 4 && logs.all.allSatisfy { !$0.contains("SECRET") && !$0.contains("TOKEN") })
        #expect(logs.all.last?.contains("\"nextRefreshSeconds\":60") == true)
    }

    @Test func aProviderDownKeepsTheLastGoodCredentialsUntilTheyEnd() async throws {
        let clock = ManualClock(start: 1_000_000)
        let provider = Provider(clock: clock, lifetime: 120)
        let logs = MemorySink()
        let refresher = provider.refresher(logs)
        #expect(await refresher.refresh())
        provider.state.withLock { $0.down = true }
        let task = Task { await refresher.run() }
        try await pass(100, on: clock, refresher)
        // Down from the refresh at 1060: retried after 1, 2, 4, 8 s, then a quarter of what is left.
        var state = provider.state.withLock { $0 }
        #expect(state.fetchedAt.prefix(6) == [1000, 1060, 1061, 1063, 1067, 1075])
        #expect(state.used == ["KEY1000"], "nothing replaced the last good credentials")
        #expect(refresher.snapshot.current?.accessKeyID == "KEY1000")
        #expect(refresher.problem() == nil, "still valid until 1120")
        try await pass(25, on: clock, refresher)
        #expect(refresher.problem()?.hasPrefix("expired; refreshing from container fails") == true)
        provider.state.withLock { $0.down = false }
        try await pass(31, on: clock, refresher)
        state = provider.state.withLock { $0 }
        #expect(state.used.count == 2 && refresher.problem() == nil, "back once the provider answers")
        task.cancel()
        let warnings = logs.all.filter { $0.contains("\"level\":\"warn\"") }
        #expect(warnings.first?.contains("the last good ones stay in use") == true)
        #expect(warnings.contains { $0.contains("none usable") })
        #expect(logs.all.allSatisfy { !$0.contains("SECRET") && !$0.contains("TOKEN") })
    }

    @Test func staticCredentialsAreHeldAndNeverFetched() async throws {
        let clock = ManualClock(start: 1_000_000)
        let refresher = CredentialsRefresher(
            sourceName: "static", fetch: { throw CredentialsFetcher.Failure("never") }, use: { _ in },
            logger: Logger(level: .info, sink: MemorySink()),
            clock: clock, fixed: true)
        await refresher.run()
        #expect(refresher.snapshot.failures == 0)
    }
}
