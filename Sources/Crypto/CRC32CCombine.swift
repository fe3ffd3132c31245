/// CRC-32C of a concatenation from the CRCs of its pieces, without their bytes: how the
/// whole-object checksum of a multipart object comes from its parts' `x-amz-checksum-crc32c`.
///
/// A CRC is linear over GF(2): appending `n` zero bytes to a message multiplies its register by
/// x^(8n) modulo the polynomial. So crc(A ‖ B) = crc(A)·x^(8·|B|) ⊕ crc(B), the pre- and
/// post-inversion cancelling (as in zlib's `crc32_combine`). The shift is applied by squaring a
/// 32×32 GF(2) matrix (the operator "one zero bit") for each bit of the length: log₂(n) steps.
/// The Swift client library (`TransferGatewayClient`, Foundation only) cannot import this
/// target and carries the same combination in its `CRC32C`; a change here belongs there too.
extension Digest {
    /// The CRC-32C of `a ‖ b`, given `crcA` of `a`, `crcB` of `b` and `b`'s length in bytes.
    /// A negative length counts as 0.
    public static func crc32cCombine(_ crcA: UInt32, _ crcB: UInt32, lengthB: Int64) -> UInt32 {
        guard lengthB > 0 else { return crcA }
        return CRC32CMatrix.shift(crcA, byBytes: UInt64(lengthB)) ^ crcB
    }

    /// The CRC-32C of pieces laid end to end, each given as its CRC and length, in order.
    /// Pieces of one length (a multipart object's parts but the last) share one shift operator.
    public static func crc32cCombine(_ pieces: [(crc: UInt32, length: Int64)]) -> UInt32 {
        var operators: [Int64: [UInt32]] = [:]
        var crc: UInt32 = 0
        for piece in pieces where piece.length > 0 {
            let shift = operators[piece.length] ?? CRC32CMatrix.shiftOperator(byBytes: UInt64(piece.length))
            operators[piece.length] = shift
            crc = CRC32CMatrix.times(shift, crc) ^ piece.crc
        }
        return crc
    }
}

/// 32×32 matrices over GF(2), each column a `UInt32`: column `i` is the image of bit `i`.
enum CRC32CMatrix {
    /// Reflected Castagnoli polynomial (`0x1EDC6F41` bit-reversed), as `tg_crc32c` uses it.
    static let polynomial: UInt32 = 0x82F6_3B78

    /// `matrix` × `vector`.
    static func times(_ matrix: [UInt32], _ vector: UInt32) -> UInt32 {
        var result: UInt32 = 0, rest = vector, column = 0
        while rest != 0 {
            if rest & 1 == 1 { result ^= matrix[column] }
            rest >>= 1
            column += 1
        }
        return result
    }

    /// `matrix` × `matrix`.
    static func square(_ matrix: [UInt32]) -> [UInt32] {
        matrix.map { times(matrix, $0) }
    }

    /// The operator that feeds one zero bit through the (reflected) register.
    static let oneZeroBit: [UInt32] = [polynomial] + (0..<31).map { UInt32(1) << $0 }

    /// The operator for one zero byte: eight zero bits.
    static let oneZeroByte: [UInt32] = square(square(square(oneZeroBit)))

    /// `crc` as if `bytes` zero bytes followed the message: x^(8·bytes) applied by squaring.
    static func shift(_ crc: UInt32, byBytes bytes: UInt64) -> UInt32 {
        var value = crc, operatorPower = oneZeroByte, rest = bytes
        while rest != 0 {
            if rest & 1 == 1 { value = times(operatorPower, value) }
            rest >>= 1
            if rest != 0 { operatorPower = square(operatorPower) }
        }
        return value
    }

    /// The operator x^(8·bytes) itself, to apply to many CRCs followed by the same length.
    static func shiftOperator(byBytes bytes: UInt64) -> [UInt32] {
        (0..<32).map { shift(UInt32(1) << $0, byBytes: bytes) }
    }
}
