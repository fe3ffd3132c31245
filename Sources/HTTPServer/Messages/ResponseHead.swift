/// Serialises a status line and header section (RFC 9112 §4–§6), adding the framing and
/// connection fields the server owns.
enum ResponseHead {
    enum Framing: Equatable {
        /// No content at all (1xx, 204, 304).
        case none
        case length(Int)
        case chunked
        /// HTTP/1.0 with unknown length: the body ends when the connection closes.
        case untilClose
    }

    /// `bodyCapacity`: room kept after the head for a body the caller appends.
    static func encode(
        status: Int, headers: HTTPHeaders, version: HTTPVersion, framing: Framing,
        close: Bool, date: String, bodyCapacity: Int = 0
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(192 + headers.count * 48 + bodyCapacity)
        out.append(text: version.text)
        out.append(0x20)
        out.append(text: String(status))
        out.append(0x20)
        out.append(text: HTTPStatus.reason(status))
        out.append(contentsOf: crlf)
        appendFields(headers, to: &out)
        out.append(contentsOf: datePrefix)
        out.append(text: date)
        out.append(contentsOf: crlf)
        switch framing {
        case .none:
            if status == 304, let length = headers["content-length"] {
                out.append(contentsOf: lengthPrefix)
                out.append(text: length)
                out.append(contentsOf: crlf)
            }
        case .length(let n):
            out.append(contentsOf: lengthPrefix)
            out.append(text: String(n))
            out.append(contentsOf: crlf)
        case .chunked:
            out.append(contentsOf: chunkedLine)
        case .untilClose:
            break
        }
        if close {
            out.append(contentsOf: closeLine)
        } else if version == .http10 {
            out.append(contentsOf: keepAliveLine)
        }
        out.append(contentsOf: crlf)
        return out
    }

    /// The fields of `headers` but those the server owns (framing, connection, date).
    private static func appendFields(_ headers: HTTPHeaders, to out: inout [UInt8]) {
        for (name, value) in headers {
            if name.equalsIgnoringASCIICase("content-length") || name.equalsIgnoringASCIICase("transfer-encoding")
                || name.equalsIgnoringASCIICase("connection") || name.equalsIgnoringASCIICase("date")
            {
                continue
            }
            // A name that is not a token, or a value with CR, LF or NUL, would split the
            // response: drop the field rather than send it.
            if name.isEmpty || !name.utf8.allSatisfy(ByteClass.isTchar) { continue }
            if value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) { continue }
            out.append(text: name)
            out.append(contentsOf: colonSpace)
            out.append(text: value)
            out.append(contentsOf: crlf)
        }
    }

    /// An informational answer (RFC 9112 §4, RFC 9110 §15.2): status line, the caller's
    /// fields, the empty line; never framing or content. Always HTTP/1.1: none goes to 1.0.
    static func informational(status: Int, headers: HTTPHeaders) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + headers.count * 48)
        out.append(text: "HTTP/1.1 \(status) \(HTTPStatus.reason(status))")
        out.append(contentsOf: crlf)
        appendFields(headers, to: &out)
        out.append(contentsOf: crlf)
        return out
    }

    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let colonSpace: [UInt8] = [0x3A, 0x20]
    private static let datePrefix = Array("Date: ".utf8)
    private static let lengthPrefix = Array("Content-Length: ".utf8)
    private static let chunkedLine = Array("Transfer-Encoding: chunked\r\n".utf8)
    private static let closeLine = Array("Connection: close\r\n".utf8)
    private static let keepAliveLine = Array("Connection: keep-alive\r\n".utf8)

    /// A complete answer for a request refused before any handler saw it.
    static func refusal(_ error: HTTPParseError, date: String, extra: [(String, String)] = []) -> [UInt8] {
        let body =
            "{\"type\":\"about:blank\",\"title\":\"\(HTTPStatus.reason(error.status))\","
            + "\"status\":\(error.status),\"code\":\"\(error.code)\",\"detail\":\"\(error.detail)\"}"
        var head = encode(
            status: error.status,
            headers: HTTPHeaders([("Content-Type", "application/problem+json")] + extra.map { (name: $0.0, value: $0.1) }),
            version: .http11, framing: .length(body.utf8.count), close: true, date: date)
        head.append(contentsOf: body.utf8)
        return head
    }

    static let continueLine: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}

extension Array where Element == UInt8 {
    /// Appends a string's UTF-8 bytes without an intermediate array.
    mutating func append(text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
}
