import Crypto
import Foundation

/// A whole-object checksum a client can recompute over the bytes it reads: the checksum of the
/// full object (S3's `FULL_OBJECT` type), never a checksum of per-part checksums. `value` is
/// base64 of the digest's bytes, as S3 writes `x-amz-checksum-*`.
public struct ObjectChecksum: Sendable, Equatable {
    /// Spelled as S3's `ChecksumAlgorithm` values.
    public enum Algorithm: String, Sendable, CaseIterable {
        /// CRC-32C (Castagnoli), four bytes big-endian: RFC 9530's `crc32c`.
        case crc32c = "CRC32C"
        /// SHA-256, 32 bytes: RFC 9530's `sha-256`.
        case sha256 = "SHA256"

        /// The key of RFC 9530's Hash Algorithms for HTTP Digest Fields registry.
        public var digestFieldKey: String {
            switch self {
            case .crc32c: return "crc32c"
            case .sha256: return "sha-256"
            }
        }

        /// How many bytes a digest of this algorithm has.
        public var byteCount: Int {
            switch self {
            case .crc32c: return 4
            case .sha256: return 32
            }
        }
    }

    /// Which digest.
    public let algorithm: Algorithm
    /// Base64 of the digest's bytes.
    public let value: String

    /// A checksum of `algorithm` whose digest is `value` (base64, as S3 writes it).
    public init(algorithm: Algorithm, value: String) {
        self.algorithm = algorithm
        self.value = value
    }

    /// The checksum of `bytes` digest bytes, or nil when they are not of the algorithm's length.
    public init?(algorithm: Algorithm, digest: [UInt8]) {
        guard digest.count == algorithm.byteCount else { return nil }
        self.init(algorithm: algorithm, value: Data(digest).base64EncodedString())
    }

    /// A CRC-32C.
    public static func crc32c(_ crc: UInt32) -> ObjectChecksum {
        ObjectChecksum(algorithm: .crc32c, value: Digest.crc32cBase64(crc))
    }

    /// The digest's bytes; nil when `value` is not base64 of the algorithm's length.
    public var digest: [UInt8]? {
        guard let data = Data(base64Encoded: value), data.count == algorithm.byteCount else { return nil }
        return Array(data)
    }

    /// The full-object CRC-32C of an object made of `parts` in order, from each part's own
    /// CRC-32C (`RecordedPart.checksum`) and size; nil when a part's checksum is unknown (its
    /// upload checked parts with `Content-MD5`) or not a CRC-32C.
    public static func combining(_ parts: [RecordedPart]) -> ObjectChecksum? {
        var pieces: [(crc: UInt32, length: Int64)] = []
        pieces.reserveCapacity(parts.count)
        for part in parts.sorted(by: { $0.number < $1.number }) {
            guard let text = part.checksum, let crc = crc32cValue(text) else { return nil }
            pieces.append((crc, part.size))
        }
        return .crc32c(Digest.crc32cCombine(pieces))
    }

    /// The CRC of a base64 `x-amz-checksum-crc32c` value (four bytes), or nil.
    public static func crc32cValue(_ base64: String) -> UInt32? {
        guard let data = Data(base64Encoded: base64), data.count == 4 else { return nil }
        return data.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}
