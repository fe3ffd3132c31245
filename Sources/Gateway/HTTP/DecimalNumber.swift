/// The one reader of whole numbers the clients send in headers and queries (`Upload-Offset`,
/// `Upload-Length`, `Range`, `?wait=`, `?limit=`): 1–18 ASCII digits and nothing else (no sign,
/// no space, no other script's digits), so every value fits an `Int64` without a check.
enum DecimalNumber {
    static func parse<S: StringProtocol>(_ text: S) -> Int64? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// A list's `limit` query parameter: `fallback` when absent, else a whole number from 1 to
/// `maximum` (400 otherwise). One rule for every list route.
enum PageLimit {
    static func read(_ query: [String: String], fallback: Int, maximum: Int) throws(APIError) -> Int {
        let limit = DecimalNumber.parse(query["limit"] ?? String(fallback)).map(Int.init) ?? -1
        guard (1...maximum).contains(limit) else { throw APIError.validation("limit must be from 1 to \(maximum).") }
        return limit
    }
}
