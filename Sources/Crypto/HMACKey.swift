import CCrypto

/// An HMAC-SHA256 key made ready once (RFC 2104): SHA-256 with the key's inner and outer pads
/// already absorbed, so a MAC under it hashes only its message and one outer block. For a key
/// that signs many messages (a SigV4 signing key signs every request of its day).
public struct HMACKey: Sendable {
    private var inner = SHA256_CTX()
    private var outer = SHA256_CTX()

    /// Prepares `key` (any length).
    public init(_ key: UnsafeRawBufferPointer) {
        tg_hmac_sha256_prepare(key.baseAddress, key.count, &inner, &outer)
    }

    /// Prepares `key` (any length).
    public init(_ key: [UInt8]) {
        self = key.withUnsafeBytes { HMACKey($0) }
    }

    /// The MAC of `message` into `mac` (32 bytes).
    public func authenticate(_ message: UnsafeRawBufferPointer, into mac: UnsafeMutableBufferPointer<UInt8>) {
        precondition(mac.count >= 32)
        withUnsafePointer(to: inner) { inner in
            withUnsafePointer(to: outer) { outer in
                tg_hmac_sha256_prepared(inner, outer, message.baseAddress, message.count, mac.baseAddress)
            }
        }
    }

    /// The MAC of `message`.
    public func authenticate(_ message: some ContiguousBytesLike) -> [UInt8] {
        message.withBytes { bytes in
            [UInt8](unsafeUninitializedCapacity: 32) { mac, count in
                authenticate(bytes, into: mac)
                count = 32
            }
        }
    }

    /// The MAC of `message` as lower-case hexadecimal, appended to `out`.
    public func appendHex(of message: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { mac in
            authenticate(message, into: mac)
            Digest.appendHex(UnsafeBufferPointer(mac), to: &out)
        }
    }
}
