/// The object-key rules: 1–1024 bytes of UTF-8 once prefixed; no empty, `.` or
/// `..` segment; no leading `/`; no backslash; no control character; no Unicode noncharacter.
/// S3 servers rewrite some of these (SeaweedFS merges `//` and turns `\` into `/`; S3 lists
/// U+FFFE as U+FFFD), so the gateway refuses them itself.
public enum ObjectKey {
    public static let maxBytes = 1024

    public static func make(prefix: String, key: String) throws(AccessDenial) -> String {
        if key.isEmpty { throw .invalidKey("the key is empty") }
        var copy = key
        // One pass over the UTF-8 bytes: characters, then segments.
        let problem: String? = copy.withUTF8 { utf8 -> String? in
            if utf8[0] == UInt8(ascii: "/") { return "the key must not start with /" }
            var segmentStart = 0
            var previous: UInt8 = 0
            for i in 0...utf8.count {
                let byte: UInt8 = i < utf8.count ? utf8[i] : UInt8(ascii: "/")
                if i < utf8.count {
                    if byte == UInt8(ascii: "\\") { return "the key must not contain a backslash" }
                    if byte < 0x20 || byte == 0x7F { return "the key must not contain control characters" }
                    // U+0080–U+009F (C1 controls) are C2 80 … C2 9F in UTF-8.
                    if previous == 0xC2 && byte >= 0x80 && byte <= 0x9F { return "the key must not contain control characters" }
                }
                if byte == UInt8(ascii: "/") {
                    let length = i - segmentStart
                    if length == 0 { return "the key must not have an empty segment" }
                    if length <= 2 && utf8[segmentStart] == UInt8(ascii: ".")
                        && (length == 1 || utf8[segmentStart + 1] == UInt8(ascii: "."))
                    {
                        return "the key must not have a . or .. segment"
                    }
                    segmentStart = i + 1
                }
                previous = byte
            }
            if UnicodeNoncharacters.occur(in: utf8) {
                return "the key must not contain a Unicode noncharacter (U+FDD0–U+FDEF, U+FFFE, U+FFFF and the last two of every plane)"
            }
            return nil
        }
        if let problem { throw .invalidKey(problem) }
        if prefix.utf8.count + key.utf8.count > maxBytes {
            throw .invalidKey("the key is longer than \(maxBytes) bytes with its prefix")
        }
        return prefix + key
    }
}
