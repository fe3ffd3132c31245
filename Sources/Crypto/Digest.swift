import CCrypto

/// Hashes and MACs over libcrypto. This target is the only one that imports `CCrypto`,
/// so no OpenSSL type leaks into the rest of the package.
public enum Digest {
    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: some ContiguousBytesLike) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        bytes.withBytes { raw in
            out.withUnsafeMutableBufferPointer { o in
                _ = SHA256(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count, o.baseAddress)
            }
        }
        return out
    }

    /// MD5 of `bytes` (for `Content-MD5` only; never for security).
    public static func md5(_ bytes: some ContiguousBytesLike) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        bytes.withBytes { raw in
            out.withUnsafeMutableBufferPointer { o in
                _ = EVP_Digest(raw.baseAddress, raw.count, o.baseAddress, &length, EVP_md5(), nil)
            }
        }
        return out
    }

    /// HMAC-SHA256 of `message` under `key`.
    public static func hmacSHA256(key: some ContiguousBytesLike, _ message: some ContiguousBytesLike) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        key.withBytes { k in
            message.withBytes { m in
                out.withUnsafeMutableBufferPointer { o in
                    _ = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count),
                             m.baseAddress?.assumingMemoryBound(to: UInt8.self), m.count, o.baseAddress, &length)
                }
            }
        }
        return out
    }

    /// Lower-case hexadecimal.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Compares in time that depends only on the lengths (for MACs and signatures).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }

    /// Cryptographically strong random bytes.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(ok == 1, "the system random generator failed")
        return out
    }
}

/// Anything whose bytes can be read in place: `[UInt8]`, slices, `String`'s UTF-8.
public protocol ContiguousBytesLike {
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ContiguousBytesLike where Element == UInt8 {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try withUnsafeBytes(body) }
}

extension ArraySlice: ContiguousBytesLike where Element == UInt8 {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try withUnsafeBytes(body) }
}

extension String: ContiguousBytesLike {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Array(utf8).withUnsafeBytes(body)
    }
}

extension Digest {
    /// Incremental SHA-256 (EVP) for data that arrives in pieces.
    public final class SHA256Context {
        private let context: OpaquePointer

        public init() {
            guard let context = EVP_MD_CTX_new() else { preconditionFailure("libcrypto is out of memory") }
            self.context = context
            EVP_DigestInit_ex(context, EVP_sha256(), nil)
        }

        deinit { EVP_MD_CTX_free(context) }

        public func update(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        }

        public func finish() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            _ = out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
            return out
        }
    }
}
