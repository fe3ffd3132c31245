/// The two Structured Field items the resumable-upload headers carry (RFC 9651): a Boolean
/// (`?1`, `?0`: `Upload-Complete`, `Upload-Incomplete`) and a non-negative Integer
/// (`Upload-Offset`, `Upload-Length`, `Upload-Draft-Interop-Version`). Parameters after `;` are
/// allowed and ignored (§3.1.2); anything else is not the item (nil), which the routes refuse.
enum StructuredField {
    /// `?1` → true, `?0` → false (RFC 9651 §3.3.6); nil for anything else.
    static func boolean(_ field: String) -> Bool? {
        switch bareItem(field) {
        case "?1": return true
        case "?0": return false
        default: return nil
        }
    }

    /// A non-negative sf-integer (RFC 9651 §3.3.1: at most 15 digits); nil for anything else,
    /// a sign included (no offset or length is negative).
    static func integer(_ field: String) -> Int64? {
        let item = bareItem(field)
        guard !item.isEmpty, item.utf8.count <= 15, item.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(item)
    }

    /// The item without the spaces around it (§4.2: leading and trailing SP are discarded) and
    /// without its parameters.
    private static func bareItem(_ field: String) -> Substring {
        var item = field.prefix { $0 != ";" }
        while let first = item.first, first == " " || first == "\t" { item = item.dropFirst() }
        while let last = item.last, last == " " || last == "\t" { item = item.dropLast() }
        return item
    }
}
