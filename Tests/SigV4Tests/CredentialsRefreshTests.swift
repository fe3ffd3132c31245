import Testing

@testable import SigV4

/// The refresh schedule and the failure rules of `CredentialsRefresh`, on plain seconds.
struct CredentialsRefreshTests {
    static func temporary(_ key: String, until end: Int) -> Credentials {
        Credentials(accessKeyID: key, secretAccessKey: "secret-\(key)", sessionToken: "token-\(key)", expiration: end)
    }

    @Test(arguments: [
        // (lifetime, refresh after): halfway through a short lifetime, 5 minutes before the end
        // of one that lasts 10 minutes or more.
        (120, 60), (20, 10), (3, 2), (1, 1), (480, 240), (600, 300), (1200, 900), (3600, 3300), (43_200, 42_900),
    ])
    func refreshComesFiveMinutesBeforeTheEndOrHalfway(lifetime: Int, after: Int) {
        #expect(CredentialsRefresh.refreshTime(expiration: 1000 + lifetime, obtainedAt: 1000) == 1000 + after)
    }

    @Test func credentialsAlreadyEndedAreRefreshedASecondLater() {
        #expect(CredentialsRefresh.refreshTime(expiration: 900, obtainedAt: 1000) == 1001)
    }

    @Test func twoMinuteCredentialsAreRefreshedEveryMinute() {
        var refresh = CredentialsRefresh(now: 1000)
        #expect(refresh.nextFetch == 1000)
        #expect(refresh.fetched(Self.temporary("A", until: 1120), now: 1000) == 1060)
        #expect(refresh.fetched(Self.temporary("B", until: 1180), now: 1060) == 1120)
        #expect(refresh.current?.accessKeyID == "B")
        #expect(refresh.isUsable(now: 1179) && !refresh.isUsable(now: 1180))
    }

    @Test func staticCredentialsAreNeverFetchedAgain() {
        var refresh = CredentialsRefresh(now: 1000)
        #expect(refresh.fetched(Credentials(accessKeyID: "K", secretAccessKey: "S"), now: 1000) == nil)
        #expect(refresh.nextFetch == nil)
        #expect(refresh.isUsable(now: .max))
    }

    @Test func aFailureKeepsTheLastGoodCredentialsAndBacksOff() {
        var refresh = CredentialsRefresh(now: 1000)
        refresh.fetched(Self.temporary("A", until: 4600), now: 1000)
        var waits: [Int] = []
        var now = 2800
        for _ in 0..<8 {
            let next = refresh.failed(now: now)
            waits.append(next - now)
            now = next
        }
        #expect(waits == [1, 2, 4, 8, 16, 30, 30, 30])
        #expect(refresh.current?.accessKeyID == "A", "the last good credentials stay")
        #expect(refresh.failures == 8)
        refresh.fetched(Self.temporary("B", until: now + 3600), now: now)
        #expect(refresh.failures == 0 && refresh.current?.accessKeyID == "B")
    }

    @Test func retriesComeSoonerAsTheEndNears() {
        var refresh = CredentialsRefresh(now: 1000)
        refresh.fetched(Self.temporary("A", until: 1120), now: 1000)
        for _ in 0..<5 { _ = refresh.failed(now: 1060) }
        // 16 s of backoff, but only 60 s are left: a quarter of them.
        #expect(refresh.failed(now: 1100) == 1105)
        #expect(refresh.failed(now: 1118) == 1119, "at least a second")
        #expect(refresh.failed(now: 1130) == 1160, "once ended, the plain backoff")
        #expect(!refresh.isUsable(now: 1130) && refresh.current != nil)
    }

    @Test func credentialsThatHaveEndedCountAsAFailure() {
        var refresh = CredentialsRefresh(now: 1000)
        refresh.fetched(Self.temporary("A", until: 1200), now: 1000)
        #expect(refresh.fetched(Self.temporary("B", until: 1100), now: 1100) == 1101)
        #expect(refresh.current?.accessKeyID == "A" && refresh.failures == 1)
    }

    @Test func nothingFetchedIsNotUsable() {
        var refresh = CredentialsRefresh(now: 1000)
        #expect(!refresh.isUsable(now: 1000) && refresh.current == nil)
        #expect(refresh.failed(now: 1000) == 1001)
        #expect(refresh.failed(now: 1001) == 1003)
    }
}
