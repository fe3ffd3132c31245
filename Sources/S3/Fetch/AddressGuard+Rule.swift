#if canImport(Glibc)
    import Glibc
#endif

extension AddressGuard {
    /// The rule a refused address falls under, in words for a person ("a loopback address"),
    /// from its text as `resolve` gives it (`127.0.0.1`, `[::1]`).
    public static func rule(forAddress text: String) -> String {
        let bare = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 { return rule(ipv4: withUnsafeBytes(of: v4) { Array($0) }) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, bare, &v6) == 1 else { return "not a public address" }
        return rule(ipv6: withUnsafeBytes(of: v6) { Array($0) })
    }

    /// IPv4, 4 bytes in network order (the ranges of `isPublicIPv4`).
    static func rule(ipv4 a: [UInt8]) -> String {
        if isLinkLocalOrMetadataIPv4(a) { return "a link-local or cloud metadata address" }
        switch (a[0], a[1]) {
        case (127, _): return "a loopback address"
        case (10, _), (172, 16...31), (192, 168): return "a private network address"
        case (100, 64...127): return "a shared (carrier-grade NAT) address"
        case (0, _): return "a 'this network' address"
        case (224...239, _): return "a multicast address"
        default: return "a reserved address"
        }
    }

    /// IPv6, 16 bytes; an embedded IPv4 address is judged as IPv4.
    static func rule(ipv6 a: [UInt8]) -> String {
        if a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xFF && a[11] == 0xFF { return rule(ipv4: Array(a[12..<16])) }
        if a[0..<15].allSatisfy({ $0 == 0 }) && a[15] == 1 { return "a loopback address" }
        if a[0] == 0x20 && a[1] == 0x02 { return rule(ipv4: Array(a[2..<6])) }
        if isLinkLocalOrMetadataIPv6(a) { return "a link-local or cloud metadata address" }
        if a[0] & 0xFE == 0xFC { return "a private network (unique local) address" }
        if a[0] == 0xFF { return "a multicast address" }
        return "a reserved address"
    }
}
