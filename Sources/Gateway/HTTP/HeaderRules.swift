/// What a client may put into headers the gateway signs or sends to S3 on its behalf
/// (presigned uploads, job options): one rule for every route.
enum HeaderRules {
    static func checkValue(_ value: String, field: String) throws(APIError) {
        // Printable ASCII only: S3 servers fold other white space before checking signatures, and
        // browsers send bytes 0x80–0xFF as Latin-1, not the UTF-8 that was signed.
        // Not only spaces either: the signature covers the trimmed value, empty then, and an
        // HTTP client may drop a header with no value (curl does), so S3 would see it unsigned.
        if value.isEmpty || value.utf8.count > 1024 || !value.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E })
            || value.utf8.allSatisfy({ $0 == 0x20 })
        {
            throw APIError.validation("\(field) must be 1–1024 printable ASCII characters, not only spaces.")
        }
    }

    /// `x-amz-meta-*` headers; names are lower-case tokens, 2 KiB in all (S3's limit).
    static func metadataHeaders(_ metadata: [String: String]?) throws(APIError) -> [(String, String)] {
        guard let metadata else { return [] }
        var total = 0
        var out: [(String, String)] = []
        var seen = Set<String>()
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty,
                name.utf8.allSatisfy({ byte in
                    (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                })
            else { throw APIError.validation("metadata names must be ASCII letters, digits, - and _.") }
            let lower = name.lowercased()
            guard seen.insert(lower).inserted else { throw APIError.validation("metadata names must differ in more than case.") }
            try checkValue(value, field: "metadata.\(lower)")
            total += lower.utf8.count + value.utf8.count
            out.append(("x-amz-meta-\(lower)", value))
        }
        guard total <= 2048 else { throw APIError.validation("metadata may hold at most 2 KiB.") }
        return out
    }
}
