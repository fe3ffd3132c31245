import Crypto
import Testing

/// CRC-32C as S3's `x-amz-checksum-crc32c` wants it, against published check values and a
/// bit-at-a-time reference, at every alignment and split.
@Suite struct CRC32CTests {
    /// The polynomial's definition, one bit at a time: what the CPU's instruction must equal.
    private static func reference(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0x82F6_3B78 : 0) }
        }
        return ~crc
    }

    private static func crc(_ bytes: [UInt8], continuing seed: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { Digest.crc32c($0, continuing: seed) }
    }

    @Test func publishedCheckValues() {
        // RFC 3720 B.4 and the catalogue's "123456789" check value.
        #expect(Self.crc(Array("123456789".utf8)) == 0xE306_9283)
        #expect(Self.crc([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(Self.crc([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(Self.crc(Array(0...31)) == 0x46DD_794E)
        #expect(Self.crc([]) == 0)
        // S3 writes the four bytes big-endian in base64.
        #expect(Digest.crc32cBase64(0xE306_9283) == "4waSgw==")
    }

    @Test func everyAlignmentAndSplitEqualsTheReference() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let bytes = (0..<300).map { _ -> UInt8 in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
        for start in 0..<9 {
            for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 250] where start + length <= bytes.count {
                let slice = Array(bytes[start..<(start + length)])
                // In place, so the first byte sits at each offset from an 8-byte boundary.
                let whole = bytes.withUnsafeBytes { Digest.crc32c(UnsafeRawBufferPointer(rebasing: $0[start..<(start + length)])) }
                #expect(whole == Self.reference(slice), "start \(start) length \(length)")
                for cut in [0, 1, length / 2, length] where cut <= length {
                    let first = Self.crc(Array(slice[..<cut]))
                    #expect(Self.crc(Array(slice[cut...]), continuing: first) == whole, "cut \(cut) of \(length)")
                }
            }
        }
    }

    /// Inputs of three 4096-byte lanes and more are summed three lanes at a time and joined by a
    /// shift: at the lanes' edges (12,293 from offset 3 is 12,288 after the unaligned bytes), past
    /// several rounds, from any offset and any running value.
    @Test func threeLaneInputsEqualTheReference() {
        var state: UInt64 = 0xD1B5_4A32_D192_ED03
        let bytes = (0..<45_000).map { _ -> UInt8 in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
        for start in [0, 3] {
            for length in [12_287, 12_288, 12_289, 12_293, 2 * 12_288 + 13, 36_864, 44_000] where start + length <= bytes.count {
                let slice = Array(bytes[start..<(start + length)])
                let whole = bytes.withUnsafeBytes { Digest.crc32c(UnsafeRawBufferPointer(rebasing: $0[start..<(start + length)])) }
                #expect(whole == Self.reference(slice), "start \(start) length \(length)")
                let cut = 5_001
                #expect(Self.crc(Array(slice[cut...]), continuing: Self.crc(Array(slice[..<cut]))) == whole, "cut of \(length)")
            }
        }
    }
}
