/// A parsed, validated request line and header section.
public struct HTTPRequestHead: Sendable {
    public var method: String
    /// The request target as sent (origin-form, absolute-form or `*`).
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// How the body is framed; decided once, by `validate`.
    public var framing: BodyFraming
    /// Whether the connection may carry another request after this one.
    public var keepAlive: Bool
    /// The client asked for `100 Continue` before sending the body.
    public var expectContinue: Bool

    /// The path part of the target, still percent-encoded (`/` for `*`).
    public private(set) var path: Substring = "/"
    /// The query part of the target without the `?`, or nil.
    public private(set) var query: Substring?

    init(
        method: String, target: String, version: HTTPVersion, headers: HTTPHeaders,
        framing: BodyFraming, keepAlive: Bool, expectContinue: Bool
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectContinue = expectContinue
        let origin = Self.originForm(of: target)
        if let q = origin.firstIndex(of: "?") {
            path = origin[..<q]
            query = origin[origin.index(after: q)...]
        } else {
            path = origin
            query = nil
        }
    }

    private static func originForm(of target: String) -> Substring {
        if target == "*" { return "/" }
        if target.hasPrefix("/") { return Substring(target) }
        // absolute-form: scheme "://" authority path-abempty [ "?" query ]
        guard let colon = target.firstIndex(of: ":"), target[colon...].hasPrefix("://") else { return "/" }
        let rest = target[target.index(colon, offsetBy: 3)...]
        guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        let tail = rest[slash...]
        return tail.hasPrefix("?") ? Substring("/" + tail) : tail
    }
}

extension HTTPRequestHead {
    /// Applies the message-level rules of RFC 9112 §3.2, §6 and RFC 9110 §10.1.1 to a head
    /// whose syntax is already known good: Host, body framing, connection persistence, Expect.
    static func validated(
        method: String, target: String, version: HTTPVersion,
        headers: HTTPHeaders
    ) -> Result<HTTPRequestHead, HTTPParseError> {
        // One pass over the fields picks out the few that frame the message. Most requests
        // carry one Host and at most one Content-Length: those are kept without an array.
        var hostCount = 0, host: String?
        var transferEncodings: [String] = [], contentLength: String?, moreContentLengths: [String] = []
        var connections: [String] = [], expect: String?
        for field in headers.fields {
            let name = field.name
            switch name.utf8.count {
            case 4 where name.equalsIgnoringASCIICase("host"):
                hostCount += 1
                if host == nil { host = field.value }
            case 6 where name.equalsIgnoringASCIICase("expect"): if expect == nil { expect = field.value }
            case 10 where name.equalsIgnoringASCIICase("connection"): connections.append(field.value)
            case 14 where name.equalsIgnoringASCIICase("content-length"):
                if contentLength == nil { contentLength = field.value } else { moreContentLengths.append(field.value) }
            case 17 where name.equalsIgnoringASCIICase("transfer-encoding"): transferEncodings.append(field.value)
            default: continue
            }
        }

        // Host: exactly one in HTTP/1.1 (RFC 9112 §3.2), at most one otherwise.
        if hostCount > 1 { return .failure(.duplicateHost) }
        if version == .http11 && hostCount == 0 { return .failure(.missingHost) }
        if let host, !isValidHost(host) { return .failure(.badHost) }

        // Body framing (RFC 9112 §6.1–6.3).
        let framing: BodyFraming
        if !transferEncodings.isEmpty {
            let codings = HTTPHeaders.listElements(of: transferEncodings)
            if contentLength != nil { return .failure(.lengthAndChunked) }
            if version == .http10 { return .failure(.transferEncodingInHTTP10) }
            guard let last = codings.last, last.equalsIgnoringASCIICase("chunked") else {
                return .failure(.chunkedNotFinal)
            }
            let chunkedCount = codings.filter { $0.equalsIgnoringASCIICase("chunked") }.count
            if chunkedCount > 1 { return .failure(.chunkedNotFinal) }
            if codings.count > 1 { return .failure(.unsupportedTransferCoding) }
            framing = .chunked
        } else if let contentLength {
            var length: Int?
            if let error = accumulateLength(contentLength, into: &length) { return .failure(error) }
            for value in moreContentLengths {
                if let error = accumulateLength(value, into: &length) { return .failure(error) }
            }
            guard let length else { return .failure(.badContentLength) }
            framing = length == 0 ? .none : .length(length)
        } else {
            framing = .none
        }

        // Persistence (RFC 9112 §9.3).
        let connection = HTTPHeaders.listElements(of: connections)
        let keepAlive: Bool
        if connection.contains(where: { $0.equalsIgnoringASCIICase("close") }) {
            keepAlive = false
        } else if version == .http10 {
            keepAlive = connection.contains(where: { $0.equalsIgnoringASCIICase("keep-alive") })
        } else {
            keepAlive = true
        }

        // Expect (RFC 9110 §10.1.1): only 100-continue is known; ignored in HTTP/1.0.
        var expectContinue = false
        if let expect, version == .http11 {
            guard expect.trimmingOWS().equalsIgnoringASCIICase("100-continue") else {
                return .failure(.expectationFailed)
            }
            expectContinue = framing != .none
        }

        return .success(
            HTTPRequestHead(
                method: method, target: target, version: version,
                headers: headers, framing: framing,
                keepAlive: keepAlive, expectContinue: expectContinue))
    }

    /// Adds one Content-Length field value to what the earlier ones said: a list of identical
    /// values is allowed (RFC 9112 §6.3 item 5); anything else is not.
    private static func accumulateLength(_ value: String, into length: inout Int?) -> HTTPParseError? {
        func accept(_ n: Int) -> HTTPParseError? {
            if let previous = length, previous != n { return .conflictingContentLength }
            length = n
            return nil
        }
        func take(_ text: Substring) -> HTTPParseError? {
            guard let n = parseDecimal(text.trimmingOWS()) else { return .badContentLength }
            return accept(n)
        }
        // The usual single number of digits alone, read from its bytes (no Substring made).
        var bytes = value
        if let n = bytes.withUTF8(digits) { return accept(n) }
        guard value.utf8.contains(UInt8(ascii: ",")) else { return take(value[...]) }
        for element in value.split(separator: ",", omittingEmptySubsequences: false) {
            if let error = take(element) { return error }
        }
        return nil
    }

    /// 1*DIGIT, without overflow: nil for anything else (white space included).
    private static func digits(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// 1*DIGIT, without overflow.
    static func parseDecimal(_ text: Substring) -> Int? {
        if let parsed = text.utf8.withContiguousStorageIfAvailable(digits) { return parsed }
        return Array(text.utf8).withUnsafeBufferPointer(digits)
    }

    /// uri-host [ ":" port ] (RFC 9110 §7.2), loosely: reg-name, IPv4 or a bracketed IPv6
    /// literal, made only of the characters those forms allow. Empty is allowed.
    static func isValidHost(_ host: String) -> Bool {
        for byte in host.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                continue
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                UInt8(ascii: "%"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"),
                UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"),
                UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"),
                UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
                continue
            default:
                return false
            }
        }
        return true
    }
}
