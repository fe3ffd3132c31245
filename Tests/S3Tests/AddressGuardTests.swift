import Testing

@testable import S3

/// The reach of an operator's own URL (the webhook receiver): private networks and loopback
/// yes, link-local addresses and the cloud metadata services no, in every spelling resolved.
struct AddressGuardTests {
    @Test(arguments: ["127.0.0.1", "10.1.2.3", "192.168.1.20", "[::1]", "[fd00::5]", "localhost"])
    func theOperatorsReceiverMayBeOnAPrivateNetwork(_ host: String) throws {
        let guardian = AddressGuard(allowedHosts: [], reach: .anyButLinkLocal)
        #expect(throws: Never.self) { _ = try guardian.resolve(host: host, port: 80) }
        #expect(throws: AddressGuard.Refusal.self) { _ = try AddressGuard(allowedHosts: []).resolve(host: host, port: 80) }
    }

    @Test(arguments: [
        "169.254.169.254", "100.100.100.200", "168.63.129.16", "[fe80::1]", "[::ffff:169.254.169.254]",
        "[::a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]", "[fd00:ec2::254]",
    ])
    func metadataAndLinkLocalAddressesAreRefused(_ host: String) {
        let guardian = AddressGuard(allowedHosts: [], reach: .anyButLinkLocal)
        #expect(throws: AddressGuard.Refusal.self) { _ = try guardian.resolve(host: host, port: 80) }
        // Unless the operator lists the host.
        let listed = AddressGuard(allowedHosts: [host], reach: .anyButLinkLocal)
        #expect(throws: Never.self) { _ = try listed.resolve(host: host, port: 80) }
    }
}
