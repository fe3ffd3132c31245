import Crypto

/// The bytes of one part (or of a whole object put at once): in memory, or a range of a spool file.
public enum PartData: Sendable {
    case bytes([UInt8])
    /// `crc32c`: the range's CRC-32C when whoever wrote the file summed the bytes as they
    /// arrived (an upload's tail), so nothing reads the file back for it; nil when unknown. The
    /// store sends it with the bytes (`x-amz-checksum-crc32c`) and S3 checks it against what it
    /// receives: a wrong one is refused (`checksum_mismatch`), never stored.
    case file(SpoolFile, offset: Int64, length: Int64, crc32c: UInt32? = nil)

    public var count: Int64 {
        switch self {
        case .bytes(let bytes): return Int64(bytes.count)
        case .file(_, _, let length, _): return length
        }
    }

    /// The bytes' CRC-32C: the one given with the file's range, else summed from memory or
    /// read back from the file (`spoolFailed`, retryable, when the file is shorter than the range).
    public func crc32c() throws -> UInt32 {
        switch self {
        case .bytes(let bytes):
            return bytes.withUnsafeBytes { Digest.crc32c($0) }
        case .file(_, _, _, let known?):
            return known
        case .file(let file, let offset, let length, nil):
            guard length > 0 else { return 0 }
            guard let crc = file.crc32c(offset...(offset + length - 1)) else {
                throw TransferError(code: .spoolFailed, retryable: true)
            }
            return crc
        }
    }

    /// The bytes' CRC-32C in base64, as S3's `x-amz-checksum-crc32c` carries it: S3 refuses a
    /// part that changed on the way (or on the spool's disk) instead of storing it.
    public func crc32cBase64() throws -> String { Digest.crc32cBase64(try crc32c()) }
}
