/// AWS's URI encoding (the `UriEncode` function of the SigV4 documentation): every byte but
/// the unreserved characters `A–Z a–z 0–9 - . _ ~` becomes `%XY` with upper-case hex; `/` is
/// kept only in paths. Applied to the UTF-8 bytes, so non-ASCII keys encode byte by byte.
public enum URIEncoding {
    public static func encode(_ text: some StringProtocol, encodeSlash: Bool = true) -> String {
        encode(String(text), encodeSlash: encodeSlash)
    }

    public static func encode(_ text: String, encodeSlash: Bool = true) -> String {
        var copy = text
        let plain = copy.withUTF8 { utf8 in
            utf8.allSatisfy { isUnreserved($0) || (!encodeSlash && $0 == UInt8(ascii: "/")) }
        }
        if plain { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3)
        append(text, encodeSlash: encodeSlash, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the encoding of `text` to `out` (no intermediate string): runs of plain bytes
    /// are copied whole, each escape written as three bytes at once.
    public static func append(_ text: String, encodeSlash: Bool = true, to out: inout [UInt8]) {
        let hex: StaticString = "0123456789ABCDEF"
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for (i, byte) in utf8.enumerated() where !(isUnreserved(byte) || (!encodeSlash && byte == UInt8(ascii: "/"))) {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
                let escape = (UInt8(ascii: "%"), hex.utf8Start[Int(byte >> 4)], hex.utf8Start[Int(byte & 0x0F)])
                withUnsafeBytes(of: escape) { out.append(contentsOf: $0) }
                runStart = i + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
    }

    /// A–Z a–z 0–9 - . _ ~, as two 64-bit masks (bit n set for byte n, then for byte 64 + n).
    @inline(__always)
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        let low: UInt64 = 0x03FF_6000_0000_0000, high: UInt64 = 0x47FF_FFFE_87FF_FFFE
        if byte < 64 { return (low >> UInt64(byte)) & 1 == 1 }
        if byte < 128 { return (high >> UInt64(byte - 64)) & 1 == 1 }
        return false
    }

    /// A query string from pairs, each side encoded, in the order given.
    public static func query(_ items: [(String, String)]) -> String {
        items.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }
}
