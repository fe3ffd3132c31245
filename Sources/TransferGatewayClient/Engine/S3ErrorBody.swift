import Foundation

/// The little the client reads of S3's XML error bodies (`<Error><Code>…</Code><Message>…`):
/// the code, and whether a presigned URL was refused for being expired. Never the URL itself.
enum S3ErrorBody {
    static func code(_ body: Data) -> String? { element("Code", in: body) }

    /// S3 answers an expired presigned URL with 403 `AccessDenied` "Request has expired".
    static func saysExpired(_ body: Data) -> Bool {
        let message = (element("Message", in: body) ?? "").lowercased()
        return message.contains("expired") || code(body) == "ExpiredToken"
    }

    static func element(_ name: String, in body: Data) -> String? {
        let text = String(decoding: body.prefix(16 << 10), as: UTF8.self)
        guard let open = text.range(of: "<\(name)>"), let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex)
        else { return nil }
        return String(text[open.upperBound..<close.lowerBound])
    }
}
