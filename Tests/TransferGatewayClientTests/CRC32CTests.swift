import Testing

@testable import TransferGatewayClient

/// The client's own CRC-32C (the library is Foundation only) and its combination, against the
/// published check values and a bit-at-a-time reference.
@Suite struct CRC32CTests {
    private static func reference(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0x82F6_3B78 : 0) }
        }
        return ~crc
    }

    private static let bytes: [UInt8] = {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<4099).map { _ in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }()

    @Test func publishedValuesAndS3sSpelling() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(CRC32C.base64(0xE306_9283) == "4waSgw==")
    }

    @Test(arguments: [0, 1, 7, 8, 9, 15, 16, 17, 1000, 4099])
    func everyLengthEqualsTheReference(_ length: Int) {
        let slice = Array(Self.bytes.prefix(length))
        #expect(CRC32C.checksum(slice) == Self.reference(slice))
        #expect(CRC32C.checksum(Self.bytes[3..<(3 + min(length, 4096))]) == Self.reference(Array(Self.bytes[3..<(3 + min(length, 4096))])))
    }

    @Test(arguments: [[0], [1], [0, 0], [1, 1, 1], [8, 0, 9], [4096], [1000, 1000, 1000]])
    func piecesCombineToTheWhole(_ lengths: [Int]) {
        var pieces: [(crc: UInt32, length: Int64)] = [], start = 0
        for length in lengths {
            pieces.append((CRC32C.checksum(Self.bytes[start..<(start + length)]), Int64(length)))
            start += length
        }
        pieces.append((CRC32C.checksum(Self.bytes[start...]), Int64(Self.bytes.count - start)))
        #expect(CRC32C.combine(pieces) == Self.reference(Self.bytes))
    }
}
