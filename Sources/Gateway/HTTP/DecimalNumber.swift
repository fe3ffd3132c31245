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
