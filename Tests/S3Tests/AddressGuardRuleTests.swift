import Testing

@testable import S3

@Test(arguments: [
    ("127.0.0.1", "a loopback address"), ("[::1]", "a loopback address"),
    ("192.168.1.1", "a private network address"), ("172.20.0.1", "a private network address"),
    ("[fd12::1]", "a private network (unique local) address"), ("100.64.0.1", "a shared (carrier-grade NAT) address"),
    ("[fe80::1]", "a link-local or cloud metadata address"), ("[fd00:ec2::254]", "a link-local or cloud metadata address"),
    ("[::ffff:10.0.0.1]", "a private network address"), ("224.0.0.1", "a multicast address"),
    ("0.0.0.0", "a 'this network' address"), ("198.18.0.1", "a reserved address"),
])
func refusedAddressesNameTheirRule(address: String, rule: String) {
    #expect(AddressGuard.rule(forAddress: address) == rule)
}
