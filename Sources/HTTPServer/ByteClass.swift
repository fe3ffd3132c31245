/// Byte classes from RFC 9110 §5.6.2 and §5.5, as lookup tables.
enum ByteClass {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09

    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    static let tchar: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = true }
        for byte in "!#$%&'*+-.^_`|~".utf8 { table[Int(byte)] = true }
        return table
    }()

    /// field-vchar / SP / HTAB: VCHAR and obs-text, plus white space inside a value.
    static let fieldValue: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in 0x20...0x7E { table[byte] = true }
        for byte in 0x80...0xFF { table[byte] = true }
        table[0x09] = true
        return table
    }()

    static func isTchar(_ byte: UInt8) -> Bool { tchar[Int(byte)] }
    static func isFieldValue(_ byte: UInt8) -> Bool { fieldValue[Int(byte)] }
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
