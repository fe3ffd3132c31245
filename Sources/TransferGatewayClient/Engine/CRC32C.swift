import Foundation

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as S3's `x-amz-checksum-crc32c`
/// and the gateway's `checksum` carry it: four bytes big-endian in base64. The library uses
/// Foundation only, so this is its own (slicing by 8, tables built once), with the GF(2)
/// combination that makes a file's CRC from its parts' CRCs and lengths (as zlib's
/// `crc32_combine`): crc(A ‖ B) = crc(A)·x^(8·|B|) ⊕ crc(B). The gateway's own is
/// `Digest.crc32cCombine` (the Crypto target, libcrypto-backed, which the client cannot
/// import); a change here belongs there too.
enum CRC32C {
    static let polynomial: UInt32 = 0x82F6_3B78

    /// Eight tables of 256: table k advances a byte followed by k zero bytes.
    static let tables: [[UInt32]] = {
        var first = [UInt32](repeating: 0, count: 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? polynomial : 0) }
            first[index] = crc
        }
        var all = [first]
        for k in 1..<8 {
            all.append(
                (0..<256).map { index in
                    let previous = all[k - 1][index]
                    return (previous >> 8) ^ first[Int(previous & 0xFF)]
                })
        }
        return all
    }()

    /// The CRC of `bytes`, continuing from `crc` (0 to begin).
    static func checksum(_ bytes: some Collection<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        let t = tables
        var c = ~crc
        let direct = bytes.withContiguousStorageIfAvailable { buffer -> UInt32 in
            var c = c, i = 0
            let n = buffer.count
            while i + 8 <= n {
                let low = c ^ (UInt32(buffer[i]) | UInt32(buffer[i + 1]) << 8 | UInt32(buffer[i + 2]) << 16 | UInt32(buffer[i + 3]) << 24)
                c =
                    t[7][Int(low & 0xFF)] ^ t[6][Int(low >> 8 & 0xFF)] ^ t[5][Int(low >> 16 & 0xFF)] ^ t[4][Int(low >> 24)]
                    ^ t[3][Int(buffer[i + 4])] ^ t[2][Int(buffer[i + 5])] ^ t[1][Int(buffer[i + 6])] ^ t[0][Int(buffer[i + 7])]
                i += 8
            }
            while i < n {
                c = (c >> 8) ^ t[0][Int((c ^ UInt32(buffer[i])) & 0xFF)]
                i += 1
            }
            return c
        }
        if let direct { return ~direct }
        for byte in bytes { c = (c >> 8) ^ t[0][Int((c ^ UInt32(byte)) & 0xFF)] }
        return ~c
    }

    /// `crc` as S3 writes it: four bytes big-endian, base64.
    static func base64(_ crc: UInt32) -> String {
        [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)].base64
    }

    /// The CRC of pieces laid end to end, from each one's CRC and length, in order.
    static func combine(_ pieces: [(crc: UInt32, length: Int64)]) -> UInt32 {
        var crc: UInt32 = 0
        for piece in pieces where piece.length > 0 {
            crc = shift(crc, byBytes: UInt64(piece.length)) ^ piece.crc
        }
        return crc
    }

    /// `crc` as if `bytes` zero bytes followed: x^(8·bytes) by repeated squaring of the
    /// one-zero-byte operator (a 32×32 GF(2) matrix, column i the image of bit i).
    static func shift(_ crc: UInt32, byBytes bytes: UInt64) -> UInt32 {
        var value = crc, power = oneZeroByte, rest = bytes
        while rest != 0 {
            if rest & 1 == 1 { value = times(power, value) }
            rest >>= 1
            if rest != 0 { power = power.map { times(power, $0) } }
        }
        return value
    }

    private static func times(_ matrix: [UInt32], _ vector: UInt32) -> UInt32 {
        var result: UInt32 = 0, rest = vector, column = 0
        while rest != 0 {
            if rest & 1 == 1 { result ^= matrix[column] }
            rest >>= 1
            column += 1
        }
        return result
    }

    private static let oneZeroByte: [UInt32] = {
        var bit = [polynomial] + (0..<31).map { UInt32(1) << $0 }
        for _ in 0..<3 { bit = bit.map { times(bit, $0) } }
        return bit
    }()
}

extension Array where Element == UInt8 {
    /// Base64 of the bytes.
    fileprivate var base64: String { Data(self).base64EncodedString() }
}
