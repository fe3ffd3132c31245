/// Writes that must not clobber: `preventOverwrite` (the key must be free: S3's
/// `If-None-Match: *`, 412 `object_exists`) and `ifMatch` (the object must still be the one with
/// that ETag: S3's `If-Match`, 412 `precondition_failed`).
enum SafeWrite {
    /// An ETag as a client gives it, quoted as S3 compares it: `"…"` of 1 to 128 visible ASCII
    /// characters; a bare value is quoted.
    static func etag(_ value: String) throws(APIError) -> String {
        let inner = value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 ? String(value.dropFirst().dropLast()) : value
        guard (1...128).contains(inner.utf8.count), inner.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") })
        else {
            throw APIError.validation("ifMatch must be an ETag: 1 to 128 visible ASCII characters, quoted or not.")
        }
        return "\"" + inner + "\""
    }
}
