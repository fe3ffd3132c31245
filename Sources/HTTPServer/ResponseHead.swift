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

    static func encode(status: Int, headers: HTTPHeaders, version: HTTPVersion, framing: Framing,
                       close: Bool, date: String) -> [UInt8] {
        var text = "\(version.text) \(status) \(HTTPStatus.reason(status))\r\n"
        text.reserveCapacity(256)
        for (name, value) in headers {
            if name.equalsIgnoringASCIICase("content-length") || name.equalsIgnoringASCIICase("transfer-encoding")
                || name.equalsIgnoringASCIICase("connection") || name.equalsIgnoringASCIICase("date") {
                continue
            }
            // A value with CR or LF would split the response: drop it rather than send it.
            if value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) { continue }
            text += "\(name): \(value)\r\n"
        }
        text += "Date: \(date)\r\n"
        switch framing {
        case .none:
            if status == 304, let length = headers["content-length"] { text += "Content-Length: \(length)\r\n" }
        case .length(let n): text += "Content-Length: \(n)\r\n"
        case .chunked: text += "Transfer-Encoding: chunked\r\n"
        case .untilClose: break
        }
        if close {
            text += "Connection: close\r\n"
        } else if version == .http10 {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// A complete answer for a request refused before any handler saw it.
    static func refusal(_ error: HTTPParseError, date: String) -> [UInt8] {
        let body = "{\"type\":\"about:blank\",\"title\":\"\(HTTPStatus.reason(error.status))\","
            + "\"status\":\(error.status),\"code\":\"\(error.code)\",\"detail\":\"\(error.detail)\"}"
        var head = encode(status: error.status,
                          headers: HTTPHeaders([("Content-Type", "application/problem+json")]),
                          version: .http11, framing: .length(body.utf8.count), close: true, date: date)
        head.append(contentsOf: body.utf8)
        return head
    }

    static let continueLine: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}
