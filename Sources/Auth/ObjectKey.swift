/// The object-key rules of PRODUCT.md §3: 1–1024 bytes of UTF-8 once prefixed; no empty, `.` or
/// `..` segment; no leading `/`; no backslash; no control character. S3 servers rewrite some of
/// these (SeaweedFS merges `//` and turns `\` into `/`), so the gateway refuses them itself.
public enum ObjectKey {
    public static let maxBytes = 1024

    public static func make(prefix: String, key: String) throws(AccessDenial) -> String {
        if key.isEmpty { throw .invalidKey("the key is empty") }
        if key.hasPrefix("/") { throw .invalidKey("the key must not start with /") }
        for scalar in key.unicodeScalars {
            if scalar == "\\" { throw .invalidKey("the key must not contain a backslash") }
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                throw .invalidKey("the key must not contain control characters")
            }
        }
        for segment in key.split(separator: "/", omittingEmptySubsequences: false) {
            if segment.isEmpty { throw .invalidKey("the key must not have an empty segment") }
            if segment == "." || segment == ".." { throw .invalidKey("the key must not have a . or .. segment") }
        }
        let full = prefix + key
        if full.utf8.count > maxBytes { throw .invalidKey("the key is longer than \(maxBytes) bytes with its prefix") }
        return full
    }
}
