import Gateway
import Testing

@testable import TransferGateway

/// What instances compare: a digest per setting that must agree, never its value; the names
/// of exactly the settings that differ.
struct SharedSettingsTests {
    func configuration(_ tweak: (inout Configuration) -> Void = { _ in }) -> Configuration {
        var c = Configuration()
        c.jwtSecret = "a-secret-of-at-least-thirty-two-bytes!!"
        c.webhookURL = "https://hooks.example/in"
        tweak(&c)
        return c
    }

    func record(_ digests: [String: String]) -> InstanceRecord {
        InstanceRecord(
            id: "i", host: "h", version: "1", schemaVersion: 13, settingsHash: Configuration.settingsHash(digests),
            settings: digests, startedAt: 0, heartbeatAt: 0, live: true)
    }

    @Test func digestsNameEachSharedSettingAndHideItsValue() {
        let digests = configuration().sharedSettingsDigests(linkSecret: "link-secret-0123456789")
        #expect(digests["GATEWAY_WEBHOOK_URL"] != nil && digests["GATEWAY_LINK_SECRET"] != nil)
        #expect(digests["GATEWAY_PORT"] == nil && digests["GATEWAY_WORKERS"] == nil, "per-instance settings may differ")
        let text = digests.map { "\($0.key)=\($0.value)" }.joined()
        #expect(!text.contains("a-secret") && !text.contains("hooks.example") && !text.contains("link-secret"))
    }

    @Test func onlyWhatDiffersIsNamed() {
        let one = record(configuration().sharedSettingsDigests(linkSecret: "link-secret-0123456789"))
        var other = record(configuration { $0.webhookURL = nil }.sharedSettingsDigests(linkSecret: "link-secret-0123456789"))
        #expect(one.disagreements(with: one).isEmpty)
        #expect(one.settingsHash != other.settingsHash)
        #expect(one.disagreements(with: other) == ["GATEWAY_WEBHOOK_URL"])
        other.version = "2"
        other.schemaVersion = 14
        #expect(one.disagreements(with: other) == ["GATEWAY_WEBHOOK_URL", "version", "schema"])
        let ownLinks = record(configuration().sharedSettingsDigests(linkSecret: "another-random-secret-9"))
        #expect(one.disagreements(with: ownLinks) == ["GATEWAY_LINK_SECRET"])
    }
}
