/// `encoding-type=url` of the listing calls (AWS S3 API Reference, ListObjectsV2): S3 then
/// URL-encodes `Key`, `Prefix`, `Delimiter`, `StartAfter` and `CommonPrefixes/Prefix` in its
/// answer, as a form would (a space is `+`, a `+` is `%2B`). Without it, a key holding a
/// character XML 1.0 cannot carry (U+FFFE, most controls) comes back as something else, so a
/// listing shows keys that do not exist. An answer without `<EncodingType>url</EncodingType>` was
/// not encoded and is read as it is (botocore's rule too).
enum ListingEncoding {
    /// The query parameter that asks for it.
    static let parameter = ("encoding-type", "url")

    /// Whether the answer says its key fields are URL-encoded.
    static func isEncoded(_ tree: XMLTree) -> Bool { tree.text("EncodingType") == "url" }

    /// A key field as sent: decoded when `encoded`; nil for a broken escape or bytes that are
    /// not UTF-8.
    static func decode(_ text: String, encoded: Bool) -> String? {
        guard encoded else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+"):
                bytes.append(0x20)
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Whether `next` sorts after `previous` as S3 sorts keys (UTF-8 bytes): a listing whose
    /// next page would start at or before where this one started would repeat itself forever.
    static func advances(_ next: String, after previous: String?) -> Bool {
        guard let previous else { return true }
        return previous.utf8.lexicographicallyPrecedes(next.utf8)
    }
}
