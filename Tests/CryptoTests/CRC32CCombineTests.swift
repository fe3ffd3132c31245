import Crypto
import Testing

/// The CRC-32C of a concatenation from its pieces' CRCs (`Digest.crc32cCombine`), against a
/// direct CRC of the concatenated bytes, at the boundaries: empty and one-byte pieces, many
/// pieces, S3's 5 MiB parts and a short last one.
@Suite struct CRC32CCombineTests {
    private static func crc(_ bytes: ArraySlice<UInt8>) -> UInt32 { bytes.withUnsafeBytes { Digest.crc32c($0) } }

    private static func bytes(_ count: Int) -> [UInt8] {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        return (0..<count).map { _ in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }

    /// `data` cut at `lengths` (the last piece takes the rest), combined, equals the direct CRC.
    private static func check(_ data: [UInt8], _ lengths: [Int]) {
        var pieces: [(crc: UInt32, length: Int64)] = []
        var start = 0
        for length in lengths {
            pieces.append((crc(data[start..<(start + length)]), Int64(length)))
            start += length
        }
        pieces.append((crc(data[start...]), Int64(data.count - start)))
        #expect(Digest.crc32cCombine(pieces) == crc(data[...]), "cut at \(lengths) of \(data.count)")
        // Pairwise, left to right, as the two-piece form.
        let pairwise = pieces.dropFirst().reduce(pieces[0].crc) { Digest.crc32cCombine($0, $1.crc, lengthB: $1.length) }
        #expect(pairwise == crc(data[...]))
    }

    @Test(arguments: [
        [], [0], [1], [0, 0, 0], [1, 1, 1, 1], [7, 0, 8], [64, 1], [3, 5, 7, 11, 13],
    ])
    func smallPiecesCombineToTheWholeCRC(_ lengths: [Int]) {
        for total in [lengths.reduce(0, +), lengths.reduce(0, +) + 1, lengths.reduce(0, +) + 100] {
            Self.check(Self.bytes(total), lengths)
        }
    }

    @Test func manyOneBytePiecesCombine() {
        let data = Self.bytes(1000)
        Self.check(data, Array(repeating: 1, count: 999))
    }

    @Test func fiveMebibytePartsAndAShortLastCombine() {
        let part = 5 * 1024 * 1024
        let data = Self.bytes(3 * part + 12345)
        Self.check(data, [part, part, part])
        Self.check(Array(data[..<(2 * part)]), [part])
        Self.check(Array(data[..<(part + 1)]), [part])
    }

    @Test func anEmptySecondPieceChangesNothing() {
        #expect(Digest.crc32cCombine(0xE306_9283, 0, lengthB: 0) == 0xE306_9283)
        #expect(Digest.crc32cCombine(0xE306_9283, 0x1234, lengthB: -5) == 0xE306_9283)
        // "12345" ‖ "6789": the catalogue's check value.
        let head = Self.crc(Array("12345".utf8)[...]), tail = Self.crc(Array("6789".utf8)[...])
        #expect(Digest.crc32cCombine(head, tail, lengthB: 4) == 0xE306_9283)
    }

    @Test func theIncrementalContextGivesTheCRCBigEndian() {
        let context = Digest.Context(.crc32c)
        context.update(Array("1234".utf8))
        context.update(Array("56789".utf8))
        #expect(context.finish() == [0xE3, 0x06, 0x92, 0x83])
    }
}
