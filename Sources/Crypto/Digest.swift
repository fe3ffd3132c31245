import CCrypto
import Foundation

/// Hashes and MACs over libcrypto. This target is the only one that imports `CCrypto`,
/// so no OpenSSL type leaks into the rest of the package.
public enum Digest {
    /// Digest algorithms fetched once. OpenSSL 3 looks an algorithm up (locks, property
    /// queries) every time a legacy `EVP_sha256()` or one-shot `SHA256()`/`HMAC()` is used;
    /// with a fetched `EVP_MD` that cost is paid once per process. Immutable after the fetch.
    struct Algorithms: @unchecked Sendable {
        let sha256: OpaquePointer
        let md5: OpaquePointer
        let sha1: OpaquePointer
    }

    static let algorithms: Algorithms = {
        guard let sha256 = EVP_MD_fetch(nil, "SHA256", nil), let md5 = EVP_MD_fetch(nil, "MD5", nil),
            let sha1 = EVP_MD_fetch(nil, "SHA1", nil)
        else {
            preconditionFailure("libcrypto has no SHA-256, SHA-1 or MD5")
        }
        return Algorithms(sha256: sha256, md5: md5, sha1: sha1)
    }()

    private static func digest(_ algorithm: OpaquePointer, _ parts: [UnsafeRawBufferPointer], size: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("libcrypto is out of memory") }
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestInit_ex2(context, algorithm, nil)
        for part in parts { EVP_DigestUpdate(context, part.baseAddress, part.count) }
        var length: UInt32 = 0
        _ = out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        return out
    }

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: some ContiguousBytesLike) -> [UInt8] {
        bytes.withBytes { input in
            [UInt8](unsafeUninitializedCapacity: 32) { out, count in
                tg_sha256(input.baseAddress, input.count, out.baseAddress)
                count = 32
            }
        }
    }

    /// MD5 of `bytes` (for `Content-MD5` only; never for security).
    public static func md5(_ bytes: some ContiguousBytesLike) -> [UInt8] {
        bytes.withBytes { digest(algorithms.md5, [$0], size: 16) }
    }

    /// CRC-32C of `bytes` continuing from `crc` (0 to begin): S3's `x-amz-checksum-crc32c`, a
    /// check against accidents on the way, not attackers. The CPU's instruction where it has one.
    public static func crc32c(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        tg_crc32c(crc, bytes.baseAddress, bytes.count)
    }

    /// `crc` as S3 writes a CRC-32C: its four bytes, big-endian, in base64.
    public static func crc32cBase64(_ crc: UInt32) -> String {
        Data(crc32cBytes(crc)).base64EncodedString()
    }

    /// SHA-1 of `bytes` (tus's `Upload-Checksum`; integrity against accidents, not attackers).
    public static func sha1(_ bytes: some ContiguousBytesLike) -> [UInt8] {
        bytes.withBytes { digest(algorithms.sha1, [$0], size: 20) }
    }

    /// HMAC-SHA256 of `message` under `key` (RFC 2104): H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m)).
    public static func hmacSHA256(key: some ContiguousBytesLike, _ message: some ContiguousBytesLike) -> [UInt8] {
        key.withBytes { k in
            message.withBytes { m in
                [UInt8](unsafeUninitializedCapacity: 32) { out, count in
                    tg_hmac_sha256(k.baseAddress, k.count, m.baseAddress, m.count, out.baseAddress)
                    count = 32
                }
            }
        }
    }

    /// SHA-256 of `bytes` into `digest` (32 bytes), for callers that keep it off the heap.
    public static func sha256(_ bytes: UnsafeRawBufferPointer, into digest: UnsafeMutableBufferPointer<UInt8>) {
        precondition(digest.count >= 32)
        tg_sha256(bytes.baseAddress, bytes.count, digest.baseAddress)
    }

    /// Lower-case hexadecimal, appended to `out`.
    /// Written into a scratch buffer and appended once: a byte-by-byte append pays a capacity
    /// and uniqueness check per byte.
    public static func appendHex(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bytes.count * 2) { text in
            let d = digits.utf8Start
            for (i, byte) in bytes.enumerated() {
                text[2 * i] = d[Int(byte >> 4)]
                text[2 * i + 1] = d[Int(byte & 0x0F)]
            }
            out.append(contentsOf: text)
        }
    }

    /// Lower-case hexadecimal, appended to `out`.
    public static func appendHex(_ bytes: [UInt8], to out: inout [UInt8]) {
        bytes.withUnsafeBufferPointer { appendHex($0, to: &out) }
    }

    /// Lower-case hexadecimal.
    public static func hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        appendHex(bytes, to: &out)
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

extension UnsafeRawBufferPointer: ContiguousBytesLike {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try body(self) }
}

extension String: ContiguousBytesLike {
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        // Native strings lend their UTF-8 in place; only bridged ones are copied.
        if let result = try utf8.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return try Array(utf8).withUnsafeBytes(body)
    }
}

extension Digest {
    /// Which digest an incremental `Context` computes. `crc32c` is S3's CRC-32C, its four
    /// bytes big-endian (a check against accidents, not attackers).
    public enum Algorithm: Sendable {
        case sha256, md5, sha1, crc32c
    }

    /// An incremental digest (EVP, or the CPU's CRC-32C) for data that arrives in pieces:
    /// hashing a part as it is spooled, or a file range read back in small blocks, never the
    /// whole of it in memory.
    public final class Context {
        /// The EVP context; nil for CRC-32C, kept in `crc`.
        private let context: OpaquePointer?
        private var crc: UInt32 = 0

        public init(_ algorithm: Algorithm = .sha256) {
            let md: OpaquePointer
            switch algorithm {
            case .sha256: md = Digest.algorithms.sha256
            case .md5: md = Digest.algorithms.md5
            case .sha1: md = Digest.algorithms.sha1
            case .crc32c:
                context = nil
                return
            }
            guard let context = EVP_MD_CTX_new() else { preconditionFailure("libcrypto is out of memory") }
            self.context = context
            EVP_DigestInit_ex2(context, md, nil)
        }

        deinit { if let context { EVP_MD_CTX_free(context) } }

        public func update(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { update($0) }
        }

        public func update(_ bytes: UnsafeRawBufferPointer) {
            guard let context else {
                crc = Digest.crc32c(bytes, continuing: crc)
                return
            }
            _ = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
        }

        /// The digest; the context is spent afterwards.
        public func finish() -> [UInt8] {
            guard let context else { return Digest.crc32cBytes(crc) }
            var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            _ = out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
            return Array(out.prefix(Int(length)))
        }
    }

    /// Incremental SHA-256.
    public typealias SHA256Context = Context

    /// `crc`'s four bytes, big-endian, as S3 and RFC 9530's `crc32c` carry it.
    public static func crc32cBytes(_ crc: UInt32) -> [UInt8] {
        [UInt8(crc >> 24), UInt8(crc >> 16 & 0xff), UInt8(crc >> 8 & 0xff), UInt8(crc & 0xff)]
    }
}
