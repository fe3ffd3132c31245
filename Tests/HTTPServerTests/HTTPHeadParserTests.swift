import Testing

@testable import HTTPServer

/// Feeds `text` whole, then byte by byte, and checks both give the same outcome.
private func parse(_ text: String, limits: HTTPLimits = HTTPLimits()) -> HTTPHeadParser.Outcome {
    let bytes = Array(text.utf8)
    return parse(bytes, limits: limits)
}

private func parse(_ bytes: [UInt8], limits: HTTPLimits = HTTPLimits()) -> HTTPHeadParser.Outcome {
    var whole = HTTPHeadParser(limits: limits)
    let wholeOutcome = bytes.withUnsafeBytes { whole.parse($0) }
    var incremental = HTTPHeadParser(limits: limits)
    var byteOutcome = HTTPHeadParser.Outcome.incomplete
    for end in 1...max(bytes.count, 1) where end <= bytes.count {
        byteOutcome = bytes[..<end].withUnsafeBytes { incremental.parse($0) }
        if case .incomplete = byteOutcome { continue }
        break
    }
    #expect(describe(wholeOutcome) == describe(byteOutcome), "whole and byte-by-byte disagree")
    return wholeOutcome
}

private func describe(_ outcome: HTTPHeadParser.Outcome) -> String {
    switch outcome {
    case .incomplete: return "incomplete"
    case .invalid(let e): return "invalid \(e.status) \(e.code)"
    case .complete(let head, let consumed): return "complete \(head.method) \(head.target) \(consumed)"
    }
}

private func refusal(_ outcome: HTTPHeadParser.Outcome) -> (Int, String)? {
    if case .invalid(let e) = outcome { return (e.status, e.code) }
    return nil
}

struct MalformedRequest: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let status: Int
    let code: String
    var testDescription: String { name }
}

private let host = "Host: example.com\r\n"

/// One line per malformed request (RFC 9112, and the refusals docs/operations.md lists), each refused with its status.
let malformedRequests: [MalformedRequest] = [
    .init(name: "no Host in HTTP/1.1", text: "GET / HTTP/1.1\r\n\r\n", status: 400, code: "missing_host"),
    .init(name: "two Host headers", text: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400, code: "duplicate_host"),
    .init(name: "two Host headers in HTTP/1.0", text: "GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", status: 400, code: "duplicate_host"),
    .init(name: "Host with a space", text: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", status: 400, code: "bad_host"),
    .init(name: "Host with a slash", text: "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", status: 400, code: "bad_host"),
    .init(
        name: "CL and TE together (smuggling)", text: "POST / HTTP/1.1\r\n\(host)Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        status: 400, code: "content_length_with_transfer_encoding"),
    .init(
        name: "TE and CL together, reversed", text: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        status: 400, code: "content_length_with_transfer_encoding"),
    .init(
        name: "TE chunked not final", text: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked, gzip\r\n\r\n", status: 400,
        code: "bad_transfer_encoding"),
    .init(
        name: "TE identity", text: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: identity\r\n\r\n", status: 400,
        code: "bad_transfer_encoding"),
    .init(
        name: "TE chunked twice", text: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        status: 400, code: "bad_transfer_encoding"),
    .init(
        name: "TE gzip then chunked", text: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip, chunked\r\n\r\n", status: 501,
        code: "unsupported_transfer_encoding"),
    .init(name: "TE empty", text: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: \r\n\r\n", status: 400, code: "bad_transfer_encoding"),
    .init(
        name: "TE chunked with a suffix", text: "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunkedx\r\n\r\n", status: 400,
        code: "bad_transfer_encoding"),
    .init(
        name: "TE in HTTP/1.0", text: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", status: 400, code: "bad_transfer_encoding"),
    .init(
        name: "conflicting Content-Length headers", text: "POST / HTTP/1.1\r\n\(host)Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
        status: 400, code: "conflicting_content_length"),
    .init(
        name: "conflicting Content-Length list", text: "POST / HTTP/1.1\r\n\(host)Content-Length: 5, 6\r\n\r\n", status: 400,
        code: "conflicting_content_length"),
    .init(
        name: "negative Content-Length", text: "POST / HTTP/1.1\r\n\(host)Content-Length: -1\r\n\r\n", status: 400,
        code: "bad_content_length"),
    .init(
        name: "plus-signed Content-Length", text: "POST / HTTP/1.1\r\n\(host)Content-Length: +5\r\n\r\n", status: 400,
        code: "bad_content_length"),
    .init(
        name: "hex Content-Length", text: "POST / HTTP/1.1\r\n\(host)Content-Length: 0x10\r\n\r\n", status: 400, code: "bad_content_length"),
    .init(
        name: "empty Content-Length", text: "POST / HTTP/1.1\r\n\(host)Content-Length: \r\n\r\n", status: 400, code: "bad_content_length"),
    .init(
        name: "overflowing Content-Length", text: "POST / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999999\r\n\r\n", status: 400,
        code: "bad_content_length"),
    .init(
        name: "Content-Length with inner space", text: "POST / HTTP/1.1\r\n\(host)Content-Length: 1 2\r\n\r\n", status: 400,
        code: "bad_content_length"),
    .init(
        name: "obs-fold with space", text: "GET / HTTP/1.1\r\n\(host)X-A: one\r\n two\r\n\r\n", status: 400, code: "obsolete_line_folding"),
    .init(
        name: "obs-fold with tab", text: "GET / HTTP/1.1\r\n\(host)X-A: one\r\n\ttwo\r\n\r\n", status: 400, code: "obsolete_line_folding"),
    .init(name: "space before colon", text: "GET / HTTP/1.1\r\nHost : example.com\r\n\r\n", status: 400, code: "bad_header_name"),
    .init(name: "tab before colon", text: "GET / HTTP/1.1\r\n\(host)X-A\t: 1\r\n\r\n", status: 400, code: "bad_header_name"),
    .init(name: "empty header name", text: "GET / HTTP/1.1\r\n\(host): value\r\n\r\n", status: 400, code: "bad_header_name"),
    .init(name: "header name with a slash", text: "GET / HTTP/1.1\r\n\(host)X/A: 1\r\n\r\n", status: 400, code: "bad_header_name"),
    .init(name: "header name with a quote", text: "GET / HTTP/1.1\r\n\(host)X\"A: 1\r\n\r\n", status: 400, code: "bad_header_name"),
    .init(name: "header without colon", text: "GET / HTTP/1.1\r\n\(host)X-A 1\r\n\r\n", status: 400, code: "bad_header"),
    .init(name: "NUL in header value", text: "GET / HTTP/1.1\r\n\(host)X-A: a\u{0}b\r\n\r\n", status: 400, code: "bad_header_value"),
    .init(name: "DEL in header value", text: "GET / HTTP/1.1\r\n\(host)X-A: a\u{7F}b\r\n\r\n", status: 400, code: "bad_header_value"),
    .init(name: "ESC in header value", text: "GET / HTTP/1.1\r\n\(host)X-A: a\u{1B}b\r\n\r\n", status: 400, code: "bad_header_value"),
    .init(name: "bare LF ends a header", text: "GET / HTTP/1.1\r\n\(host)X-A: 1\n\r\n", status: 400, code: "bad_line_ending"),
    .init(name: "bare LF ends the request line", text: "GET / HTTP/1.1\nHost: a\r\n\r\n", status: 400, code: "bad_line_ending"),
    .init(name: "bare CR in a header", text: "GET / HTTP/1.1\r\n\(host)X-A: a\rb\r\n\r\n", status: 400, code: "bad_line_ending"),
    .init(name: "bare CR in the request line", text: "GET /\r HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_line_ending"),
    .init(name: "lone LF as the head end", text: "GET / HTTP/1.1\r\n\(host)\n", status: 400, code: "bad_line_ending"),
    .init(name: "request line with one part", text: "GET\r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "request line with two parts", text: "GET /\r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "double space after method", text: "GET  / HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "trailing space after version", text: "GET / HTTP/1.1 \r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "space inside target", text: "GET /a b HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "lower-case protocol", text: "GET / http/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "version without minor", text: "GET / HTTP/1\r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "method with a slash", text: "G/T / HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "leading space before method", text: " GET / HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_line"),
    .init(name: "HTTP/2.0 on an HTTP/1 connection", text: "GET / HTTP/2.0\r\n\(host)\r\n", status: 505, code: "http_version_not_supported"),
    .init(name: "HTTP/0.9 in a request line", text: "GET / HTTP/0.9\r\n\(host)\r\n", status: 505, code: "http_version_not_supported"),
    .init(name: "HTTP/1.2", text: "GET / HTTP/1.2\r\n\(host)\r\n", status: 505, code: "http_version_not_supported"),
    .init(name: "target without slash", text: "GET foo HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_target"),
    .init(name: "target starting with //", text: "GET //evil.example/ HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_target"),
    .init(name: "asterisk target with GET", text: "GET * HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_target"),
    .init(name: "DEL in target", text: "GET /a\u{7F} HTTP/1.1\r\n\(host)\r\n", status: 400, code: "bad_request_target"),
    .init(
        name: "unknown expectation", text: "POST / HTTP/1.1\r\n\(host)Content-Length: 1\r\nExpect: 200-ok\r\n\r\n", status: 417,
        code: "expectation_failed"),
]

@Test(arguments: malformedRequests)
func malformedRequestIsRefused(_ request: MalformedRequest) {
    let outcome = parse(request.text)
    let got = refusal(outcome)
    #expect(got?.0 == request.status && got?.1 == request.code, "\(request.name): \(describe(outcome))")
}

@Test func everyByteInAHeaderNameOutsideTcharIsRefused() {
    let tchars = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
    for byte in UInt8(0)...UInt8(255) where byte != UInt8(ascii: ":") {
        var bytes = Array("GET / HTTP/1.1\r\nHost: a\r\nX".utf8)
        bytes.append(byte)
        bytes.append(contentsOf: Array("Y: 1\r\n\r\n".utf8))
        var parser = HTTPHeadParser()
        let outcome = bytes.withUnsafeBytes { parser.parse($0) }
        if tchars.contains(byte) {
            guard case .complete = outcome else { Issue.record("byte \(byte) refused in a name"); continue }
        } else {
            #expect(refusal(outcome) != nil, "byte \(byte) accepted in a header name")
        }
    }
}

@Test func everyControlByteInAHeaderValueIsRefusedButTab() {
    for byte in UInt8(0)...UInt8(255) {
        var bytes = Array("GET / HTTP/1.1\r\nHost: a\r\nX-A: a".utf8)
        bytes.append(byte)
        bytes.append(contentsOf: Array("b\r\n\r\n".utf8))
        var parser = HTTPHeadParser()
        let outcome = bytes.withUnsafeBytes { parser.parse($0) }
        let allowed = byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
        if allowed {
            guard case .complete = outcome else { Issue.record("byte \(byte) refused in a value"); continue }
        } else {
            #expect(refusal(outcome) != nil, "byte \(byte) accepted in a header value")
        }
    }
}

@Test func requestLineLimitIsExact() {
    var limits = HTTPLimits()
    limits.maxRequestLineBytes = 64
    let fits = "GET /" + String(repeating: "a", count: 64 - 14) + " HTTP/1.1"
    #expect(fits.utf8.count == 64)
    guard case .complete = parse(fits + "\r\n\(host)\r\n", limits: limits) else {
        Issue.record("a request line at the limit was refused"); return
    }
    let over = "GET /" + String(repeating: "a", count: 65 - 14) + " HTTP/1.1"
    #expect(refusal(parse(over + "\r\n\(host)\r\n", limits: limits))?.0 == 414)
    // Refused while still arriving, before any CRLF.
    var parser = HTTPHeadParser(limits: limits)
    let endless = Array(("GET /" + String(repeating: "a", count: 100)).utf8)
    #expect(refusal(endless.withUnsafeBytes { parser.parse($0) })?.0 == 414)
}

@Test func defaultRequestLineLimitIs8KiB() {
    let target = "/" + String(repeating: "a", count: 8 * 1024)
    #expect(refusal(parse("GET \(target) HTTP/1.1\r\n\(host)\r\n"))?.0 == 414)
    let fits = "/" + String(repeating: "a", count: 8 * 1024 - 20)
    guard case .complete = parse("GET \(fits) HTTP/1.1\r\n\(host)\r\n") else { Issue.record("8 KiB line refused"); return }
}

@Test func headerSectionLimitIs16KiB() {
    // Header section bytes: everything after the request line's CRLF, final CRLF included.
    let filler = 16 * 1024 - host.utf8.count - "X-Fill: \r\n".utf8.count - 2
    let fits = "GET / HTTP/1.1\r\n\(host)X-Fill: \(String(repeating: "f", count: filler))\r\n\r\n"
    guard case .complete = parse(fits) else { Issue.record("16 KiB header section refused"); return }
    let over = "GET / HTTP/1.1\r\n\(host)X-Fill: \(String(repeating: "f", count: filler + 1))\r\n\r\n"
    #expect(refusal(parse(over))?.0 == 431)
    var parser = HTTPHeadParser()
    let endless = Array(("GET / HTTP/1.1\r\nX-A: " + String(repeating: "x", count: 20_000)).utf8)
    #expect(refusal(endless.withUnsafeBytes { parser.parse($0) })?.0 == 431)
}

@Test func tooManyHeaderFieldsAre431() {
    var limits = HTTPLimits()
    limits.maxHeaderCount = 10
    let ten = (0..<9).map { "X-\($0): v\r\n" }.joined()
    guard case .complete = parse("GET / HTTP/1.1\r\n\(host)\(ten)\r\n", limits: limits) else {
        Issue.record("10 fields refused"); return
    }
    let eleven = (0..<10).map { "X-\($0): v\r\n" }.joined()
    #expect(refusal(parse("GET / HTTP/1.1\r\n\(host)\(eleven)\r\n", limits: limits))?.0 == 431)
}

@Test func validRequestParses() throws {
    let text =
        "POST /v1/jobs?x=1&y=two HTTP/1.1\r\nHost: gw.example:8080\r\nContent-Length: 5, 5\r\nX-Empty:\r\nX-Trim: \t spaced value \t\r\n\r\nhello"
    guard case .complete(let head, let consumed) = parse(text) else { Issue.record("refused"); return }
    #expect(head.method == "POST")
    #expect(head.path == "/v1/jobs")
    #expect(head.query == "x=1&y=two")
    #expect(head.framing == .length(5))
    #expect(head.headers["x-trim"] == "spaced value")
    #expect(head.headers["X-EMPTY"] == "")
    #expect(head.keepAlive)
    #expect(consumed == text.utf8.count - 5)
}

@Test func leadingEmptyLinesAreIgnored() {
    guard case .complete(let head, _) = parse("\r\n\r\nGET / HTTP/1.1\r\n\(host)\r\n") else { Issue.record("refused"); return }
    #expect(head.method == "GET")
}

@Test func connectionPersistenceFollowsVersion() {
    func keepAlive(_ text: String) -> Bool? {
        if case .complete(let head, _) = parse(text) { return head.keepAlive }
        return nil
    }
    #expect(keepAlive("GET / HTTP/1.1\r\n\(host)\r\n") == true)
    #expect(keepAlive("GET / HTTP/1.1\r\n\(host)Connection: close\r\n\r\n") == false)
    #expect(keepAlive("GET / HTTP/1.1\r\n\(host)Connection: keep-alive, Close\r\n\r\n") == false)
    #expect(keepAlive("GET / HTTP/1.0\r\n\r\n") == false)
    #expect(keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") == true)
}

@Test func framingIsDecided() {
    func framing(_ text: String) -> BodyFraming? {
        if case .complete(let head, _) = parse(text) { return head.framing }
        return nil
    }
    #expect(framing("POST / HTTP/1.1\r\n\(host)Transfer-Encoding: Chunked\r\n\r\n") == .chunked)
    #expect(framing("POST / HTTP/1.1\r\n\(host)Content-Length: 0\r\n\r\n") == BodyFraming.none)
    #expect(framing("POST / HTTP/1.1\r\n\(host)Content-Length: 7\r\nContent-Length: 7\r\n\r\n") == .length(7))
    #expect(framing("GET / HTTP/1.1\r\n\(host)\r\n") == BodyFraming.none)
}

@Test func expectContinueIsRecognised() {
    if case .complete(let head, _) = parse("PUT / HTTP/1.1\r\n\(host)Content-Length: 3\r\nExpect: 100-Continue\r\n\r\n") {
        #expect(head.expectContinue)
    } else {
        Issue.record("refused")
    }
}

@Test func absoluteFormTargetGivesPath() {
    guard case .complete(let head, _) = parse("GET http://example.com/a/b?c=d HTTP/1.1\r\n\(host)\r\n") else {
        Issue.record("refused"); return
    }
    #expect(head.path == "/a/b")
    #expect(head.query == "c=d")
}

@Test func incompleteHeadWaits() {
    #expect(describe(parse("GET / HTTP/1.1\r\nHost: a\r\n")) == "incomplete")
    #expect(describe(parse("GET / HTTP/1.1\r\nHost: a\r\n\r")) == "incomplete")
}

/// Random mutations of a valid request: the parser answers (never traps), and whole and
/// byte-by-byte feeding agree (checked inside `parse`).
@Test func randomMutationsNeverCrashAndAgreeByteByByte() {
    var generator = SystemRandomNumberGenerator()
    let seed = Array("POST /v1/jobs?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n".utf8)
    let interesting: [UInt8] = [0, 9, 10, 13, 32, 58, 0x7F, 0x80, 0xFF, UInt8(ascii: ","), UInt8(ascii: "\"")]
    for _ in 0..<2000 {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            let at = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: bytes[at] = interesting.randomElement(using: &generator)!
            case 1: bytes.insert(interesting.randomElement(using: &generator)!, at: at)
            default: bytes.remove(at: at)
            }
        }
        _ = parse(bytes)
    }
}

@Test func byteClassesMatchTheRFCsDefinitions() {
    let tchars = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
    for value in 0...255 {
        let byte = UInt8(value)
        #expect(ByteClass.isTchar(byte) == tchars.contains(byte), "tchar \(value)")
        // field-vchar (VCHAR, obs-text), SP and HTAB
        #expect(
            ByteClass.isFieldValue(byte) == ((0x21...0x7E).contains(value) || value >= 0x80 || value == 0x20 || value == 0x09),
            "field value \(value)")
    }
}

@Test func fieldValuesAreCheckedInEveryLaneOfTheWordTest() {
    for value in 0...255 {
        let byte = UInt8(value)
        for length in [1, 7, 8, 9, 17] {
            for at in 0..<length {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                bytes[at] = byte
                let ok = bytes.withUnsafeBytes { ByteClass.allFieldValue($0) }
                #expect(ok == ByteClass.isFieldValue(byte), "byte \(value) at \(at) of \(length)")
            }
        }
    }
}
