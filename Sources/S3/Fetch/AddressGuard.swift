#if canImport(Glibc)
    import Glibc
#endif

/// The private-network block of URL imports: loopback, private, link-local,
/// shared, multicast, reserved and cloud-metadata addresses are refused, in IPv4, IPv6 and
/// IPv6 forms that embed an IPv4 address. Checked on the addresses a name resolves to, so a
/// public name pointing inward is refused as well; exemptions are `host` or `host:port`
/// entries of `GATEWAY_IMPORT_ALLOW_HOSTS`. An operator's own URL (the webhook receiver) may
/// be anywhere but a link-local address (`.anyButLinkLocal`), where cloud metadata services live.
public struct AddressGuard: Sendable {
    public enum Reach: Sendable {
        /// Public addresses only (a URL a user named).
        case publicOnly
        /// Loopback and private networks too, never link-local (a URL the operator set).
        case anyButLinkLocal
    }

    public let allowedHosts: Set<String>
    public let reach: Reach

    public init(allowedHosts: [String], reach: Reach = .publicOnly) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
        self.reach = reach
    }

    /// Whether an IPv4 address is link-local (169.254.0.0/16: the cloud metadata services), or
    /// one of the metadata services that live elsewhere (Alibaba 100.100.100.200, Azure's
    /// 168.63.129.16).
    public static func isLinkLocalOrMetadataIPv4(_ a: [UInt8]) -> Bool {
        (a[0] == 169 && a[1] == 254) || a == [100, 100, 100, 200] || a == [168, 63, 129, 16]
    }

    /// Whether an IPv6 address is link-local (fe80::/10), a form of a link-local IPv4 address,
    /// or AWS's IPv6 metadata address (fd00:ec2::254).
    public static func isLinkLocalOrMetadataIPv6(_ a: [UInt8]) -> Bool {
        if a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xFF && a[11] == 0xFF { return isLinkLocalOrMetadataIPv4(Array(a[12..<16])) }
        if a[0..<12].allSatisfy({ $0 == 0 }) { return isLinkLocalOrMetadataIPv4(Array(a[12..<16])) }  // IPv4-compatible
        if a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xFF && a[3] == 0x9B && a[4..<12].allSatisfy({ $0 == 0 }) {
            return isLinkLocalOrMetadataIPv4(Array(a[12..<16]))
        }
        if a[0] == 0x20 && a[1] == 0x02 { return isLinkLocalOrMetadataIPv4(Array(a[2..<6])) }
        if a[0] == 0xFE && a[1] & 0xC0 == 0x80 { return true }
        let ec2: [UInt8] = [0xFD, 0x00, 0x0E, 0xC2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54]
        return a == ec2
    }

    func isExempt(host: String, port: Int) -> Bool {
        let name = host.lowercased()
        let bracketed = name.contains(":") ? "[\(name)]" : name
        return allowedHosts.contains(name) || allowedHosts.contains(bracketed) || allowedHosts.contains("\(bracketed):\(port)")
    }

    /// Whether an IPv4 address (4 bytes, network order) may be contacted.
    public static func isPublicIPv4(_ a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _): return false  // this network, private, loopback
        case (100, 64...127): return false  // shared (carrier-grade NAT)
        case (169, 254): return false  // link-local, cloud metadata
        case (172, 16...31): return false  // private
        case (192, 168): return false  // private
        case (192, 0) where a[2] == 0 || a[2] == 2: return false  // IETF protocol, TEST-NET-1
        case (198, 18...19): return false  // benchmarking
        case (198, 51) where a[2] == 100: return false  // TEST-NET-2
        case (203, 0) where a[2] == 113: return false  // TEST-NET-3
        case (224...255, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    /// Whether an IPv6 address (16 bytes) may be contacted; embedded IPv4 is judged as IPv4.
    public static func isPublicIPv6(_ a: [UInt8]) -> Bool {
        let zeroPrefix10 = a[0..<10].allSatisfy { $0 == 0 }
        if zeroPrefix10 && a[10] == 0xFF && a[11] == 0xFF { return isPublicIPv4(Array(a[12..<16])) }  // ::ffff:a.b.c.d
        if a[0..<12].allSatisfy({ $0 == 0 }) { return false }  // ::, ::1, IPv4-compatible
        if a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xFF && a[3] == 0x9B && a[4..<12].allSatisfy({ $0 == 0 }) {
            return isPublicIPv4(Array(a[12..<16]))  // 64:ff9b::/96 NAT64
        }
        if a[0] == 0x20 && a[1] == 0x02 { return isPublicIPv4(Array(a[2..<6])) }  // 2002::/16 6to4
        if a[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if a[0] == 0xFE && a[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
        if a[0] == 0xFE && a[1] & 0xC0 == 0xC0 { return false }  // fec0::/10 site-local
        if a[0] == 0xFF { return false }  // multicast
        if a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8 { return false }  // documentation
        return true
    }

    public enum Refusal: Error, Equatable, Sendable {
        case unresolvable(String)
        case forbidden(host: String, address: String)
    }

    /// Resolves `host` (blocking: call off the cooperative pool) and returns the address to pin
    /// the connection to. Every address the name has must be allowed, not just the first.
    public func resolve(host: String, port: Int) throws(Refusal) -> String {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(bare, String(port), &hints, &result) == 0, let first = result else { throw .unresolvable(host) }
        defer { freeaddrinfo(first) }
        let exempt = isExempt(host: bare, port: port)
        var chosen: String?
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let entry = node {
            node = entry.pointee.ai_next
            guard let address = entry.pointee.ai_addr else { continue }
            let text: String
            let allowed: Bool
            if entry.pointee.ai_family == AF_INET {
                let bytes = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    withUnsafeBytes(of: sin.pointee.sin_addr) { Array($0) }
                }
                text = bytes.map(String.init).joined(separator: ".")
                allowed = reach == .publicOnly ? Self.isPublicIPv4(bytes) : !Self.isLinkLocalOrMetadataIPv4(bytes)
            } else if entry.pointee.ai_family == AF_INET6 {
                let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    withUnsafeBytes(of: sin6.pointee.sin6_addr) { Array($0) }
                }
                var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                _ = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
                text = "[" + String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "]"
                allowed = reach == .publicOnly ? Self.isPublicIPv6(bytes) : !Self.isLinkLocalOrMetadataIPv6(bytes)
            } else {
                continue
            }
            if !allowed && !exempt { throw .forbidden(host: host, address: text) }
            if chosen == nil { chosen = text }
        }
        guard let chosen else { throw .unresolvable(host) }
        return chosen
    }
}
