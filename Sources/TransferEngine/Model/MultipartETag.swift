import Crypto

/// The ETag S3 gives a completed multipart upload: the MD5 of the parts' binary MD5s, a dash,
/// the part count. Known only when every part's ETag is a plain MD5 (not under SSE-KMS/C).
public enum MultipartETag {
    public static func expected(for partETags: [String]) -> String? {
        var joined: [UInt8] = []
        joined.reserveCapacity(partETags.count * 16)
        for etag in partETags {
            guard let digest = md5Bytes(etag) else { return nil }
            joined += digest
        }
        return "\"\(Digest.hex(Digest.md5(joined)))-\(partETags.count)\""
    }

    /// The MD5 a single-part object's ETag is, when it is one (nil for a multipart ETag).
    public static func plainMD5(_ etag: String) -> [UInt8]? { md5Bytes(etag) }

    /// The 16 bytes of a quoted or bare 32-hex-digit ETag.
    static func md5Bytes(_ etag: String) -> [UInt8]? {
        let hex = Array(etag.utf8.filter { $0 != UInt8(ascii: "\"") })
        guard hex.count == 32 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(16)
        for i in stride(from: 0, to: 32, by: 2) {
            guard let high = nibble(hex[i]), let low = nibble(hex[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Same ETag, ignoring quotes and a weak prefix's absence.
    public static func same(_ a: String, _ b: String) -> Bool {
        a.filter { $0 != "\"" } == b.filter { $0 != "\"" }
    }
}
