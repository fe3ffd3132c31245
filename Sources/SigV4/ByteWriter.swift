/// Bytes written into a buffer sized beforehand (the caller counts every write's worst case).
/// A write that would not fit is dropped and marks the writer `overflowed`: the caller then
/// uses nothing it wrote.
struct ByteWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0
    private(set) var overflowed = false

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// An ASCII letter in lower case; any other byte as it is.
    static func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    mutating func put(_ byte: UInt8) {
        guard count < capacity else { overflowed = true; return }
        base[count] = byte
        count += 1
    }

    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count <= capacity - count else { overflowed = true; return }
        if let source = bytes.baseAddress { (base + count).update(from: source, count: bytes.count) }
        count += bytes.count
    }

    /// Bytes of memory bound to another type (a tuple of words), copied as raw bytes.
    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= capacity - count else { overflowed = true; return }
        if let source = bytes.baseAddress { UnsafeMutableRawPointer(base + count).copyMemory(from: source, byteCount: bytes.count) }
        count += bytes.count
    }

    mutating func put(_ bytes: [UInt8]) { bytes.withUnsafeBufferPointer { put($0) } }

    mutating func put(_ text: String) {
        var text = text
        text.withUTF8 { put($0) }
    }

    mutating func putLowercased(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            guard bytes.count <= capacity - count else { overflowed = true; return }
            for (i, byte) in bytes.enumerated() { base[count + i] = Self.lower(byte) }
            count += bytes.count
        }
    }

    /// AWS's URI encoding of `text` (lower-cased first when asked), `/` included.
    mutating func putEncoded(_ text: String, lowercased: Bool = false) {
        let hex: StaticString = "0123456789ABCDEF"
        var text = text
        text.withUTF8 { bytes in
            guard bytes.count * 3 <= capacity - count else { overflowed = true; return }
            var at = base + count
            for raw in bytes {
                let byte = lowercased ? Self.lower(raw) : raw
                if URIEncoding.isUnreserved(byte) {
                    at[0] = byte
                    at += 1
                } else {
                    at[0] = UInt8(ascii: "%")
                    at[1] = hex.utf8Start[Int(byte >> 4)]
                    at[2] = hex.utf8Start[Int(byte & 0x0F)]
                    at += 3
                }
            }
            count = at - base
        }
    }

    mutating func putHex(_ bytes: UnsafeBufferPointer<UInt8>) {
        let digits: StaticString = "0123456789abcdef"
        for byte in bytes {
            put(digits.utf8Start[Int(byte >> 4)])
            put(digits.utf8Start[Int(byte & 0x0F)])
        }
    }

    /// `n` (not negative) in decimal digits.
    mutating func putDecimal(_ n: Int) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { digits in
            var v = max(0, n), start = 24
            repeat {
                start -= 1
                digits[start] = UInt8(48 + v % 10)
                v /= 10
            } while v > 0
            put(UnsafeRawBufferPointer(rebasing: digits[start...]))
        }
    }
}
