#if canImport(Glibc)
    import Glibc
#endif

/// An IP address or a CIDR block (`10.0.0.0/8`, `192.0.2.7`, `fd00::/8`, `::1`), for the
/// proxies whose `X-Forwarded-For` the server believes. IPv4 addresses also match in their
/// IPv4-mapped IPv6 form (`::ffff:10.1.2.3`), as a dual-stack socket reports them.
public struct AddressBlock: Sendable, Equatable {
    /// 4 or 16 bytes.
    let network: [UInt8]
    let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, let address = Self.parse(String(first)) else { return nil }
        let bits = address.count * 8
        var length = bits
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...bits).contains(given), parts[1].allSatisfy(\.isNumber) else { return nil }
            length = given
        }
        network = Self.masked(address, length)
        prefixLength = length
    }

    /// The 4 or 16 bytes of a numeric address, or nil.
    public static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    /// Whether the numeric address `text` lies in this block.
    public func contains(_ text: String) -> Bool {
        guard var address = Self.parse(text) else { return false }
        if address.count == 16 && network.count == 4 && address[0..<10].allSatisfy({ $0 == 0 })
            && address[10] == 0xFF && address[11] == 0xFF
        {
            address = Array(address[12..<16])
        }
        guard address.count == network.count else { return false }
        return Self.masked(address, prefixLength) == network
    }

    private static func masked(_ address: [UInt8], _ length: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let keep = min(8, max(0, length - index * 8))
            return keep == 8 ? byte : keep == 0 ? 0 : byte & ~UInt8(0xFF >> keep)
        }
    }
}

extension Array where Element == AddressBlock {
    func contains(address: String) -> Bool { contains { $0.contains(address) } }
}

/// Who a request comes from: the peer's address, or, when the peer is a trusted proxy, the
/// client its `X-Forwarded-For` names (RFC 7239's informal predecessor): the list is read from
/// the right, skipping trusted proxies; the first address that is not one is the client.
enum ForwardedClient {
    static func resolve(peer: String, forwardedFor: [String], trusted: [AddressBlock]) -> String {
        guard !trusted.isEmpty, trusted.contains(address: peer), !forwardedFor.isEmpty else { return peer }
        var client = peer
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { String($0.trimmingOWS()) }
        for hop in hops.reversed() {
            let address = hop.hasPrefix("[") && hop.hasSuffix("]") ? String(hop.dropFirst().dropLast()) : hop
            guard AddressBlock.parse(address) != nil else { break }
            client = address
            if !trusted.contains(address: address) { break }
        }
        return client
    }
}
