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

    /// Appends the encoding of `text` to `out` (no intermediate string).
    public static func append(_ text: String, encodeSlash: Bool = true, to out: inout [UInt8]) {
        let hex: StaticString = "0123456789ABCDEF"
        var text = text
        text.withUTF8 { utf8 in
            for byte in utf8 {
                if isUnreserved(byte) || (!encodeSlash && byte == UInt8(ascii: "/")) {
                    out.append(byte)
                } else {
                    out.append(UInt8(ascii: "%"))
                    out.append(hex.utf8Start[Int(byte >> 4)])
                    out.append(hex.utf8Start[Int(byte & 0x0F)])
                }
            }
        }
    }

    @inline(__always)
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// A query string from pairs, each side encoded, in the order given.
    public static func query(_ items: [(String, String)]) -> String {
        items.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }
}
