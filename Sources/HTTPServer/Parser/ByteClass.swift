/// Byte classes from RFC 9110 §5.6.2 and §5.5, as lookup tables.
enum ByteClass {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09

    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA,
    /// as two 64-bit masks (bit n set for byte n, then for byte 64 + n): no table behind a lazy
    /// global to reach for every byte of every header name.
    static func isTchar(_ byte: UInt8) -> Bool {
        let low: UInt64 = 0x03FF_6CFA_0000_0000, high: UInt64 = 0x57FF_FFFF_C7FF_FFFE
        if byte < 64 { return (low >> UInt64(byte)) & 1 == 1 }
        if byte < 128 { return (high >> UInt64(byte - 64)) & 1 == 1 }
        return false
    }

    /// field-vchar / SP / HTAB: VCHAR and obs-text, plus white space inside a value.
    static func isFieldValue(_ byte: UInt8) -> Bool {
        byte >= 0x20 ? byte != 0x7F : byte == 0x09
    }

    /// Whether every byte is a field-value byte; eight at a time where none is below 0x20 or
    /// DEL (the classic word tests), byte by byte around the rest.
    static func allFieldValue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i < bytes.count {
            if i + 8 <= bytes.count {
                let word = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let control = (word &- ones &* 0x20) & ~word & highs
                let del = word ^ (ones &* 0x7F)
                if control == 0 && (del &- ones) & ~del & highs == 0 {
                    i += 8
                    continue
                }
            }
            if !isFieldValue(bytes[i]) { return false }
            i += 1
        }
        return true
    }

    static func isWhite(_ byte: UInt8) -> Bool { byte == sp || byte == htab }

    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }
}
