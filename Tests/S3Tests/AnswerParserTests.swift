import Testing

@testable import S3

/// The answers `FileSender` reads from a store: framed by length, chunks or the connection's
/// end, after interim answers, in pieces as small as a byte, and bounded.
struct AnswerParserTests {
    private func feed(_ text: String, pieceSize: Int = .max, parser: inout AnswerParser) throws -> AnswerParser.Step {
        let bytes = Array(text.utf8)
        var step = AnswerParser.Step.needMore
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + min(pieceSize, bytes.count))
            #expect(step == .needMore, "done before the last piece")
            step = try bytes[start..<end].withUnsafeBytes { raw in try parser.feed(raw) }
            start = end
        }
        return step
    }

    private func fields(_ pairs: [(String, String)]) -> [AnswerParser.Field] {
        pairs.map { AnswerParser.Field(name: $0.0, value: $0.1) }
    }

    @Test(arguments: [1, 7, Int.max])
    func aLengthFramedAnswerInAnyPiecesIsWholeAtItsLastByte(pieceSize: Int) throws {
        var parser = AnswerParser()
        let answer = "HTTP/1.1 200 OK\r\nETag: \"abc\"\r\nContent-Length: 5\r\n\r\nhello"
        let step = try feed(answer, pieceSize: pieceSize, parser: &parser)
        #expect(
            step
                == .done(
                    status: 200, headers: fields([("etag", "\"abc\""), ("content-length", "5")]), body: Array("hello".utf8), keepAlive: true
                ))
    }

    @Test func interimAnswersAreSkipped() throws {
        var parser = AnswerParser()
        let step = try feed(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 204 No Content\r\nETag: x\r\n\r\n", parser: &parser)
        #expect(step == .done(status: 204, headers: fields([("etag", "x")]), body: [], keepAlive: true))
    }

    @Test(arguments: [1, Int.max])
    func aChunkedBodyWithExtensionsAndTrailersIsJoined(pieceSize: Int) throws {
        var parser = AnswerParser()
        let answer =
            "HTTP/1.1 503 Slow Down\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "6;name=value\r\n<Error\r\nA\r\n><Code>Slo\r\n0\r\nX-Trailer: 1\r\n\r\n"
        let step = try feed(answer, pieceSize: pieceSize, parser: &parser)
        guard case .done(let status, _, let body, let keepAlive) = step else { Issue.record("not whole: \(step)"); return }
        #expect(status == 503 && String(decoding: body, as: UTF8.self) == "<Error><Code>Slo" && keepAlive)
    }

    @Test func closeHTTP10AndExtraBytesEndTheConnection() throws {
        var close = AnswerParser()
        #expect(
            try feed("HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", parser: &close)
                == .done(
                    status: 200, headers: fields([("connection", "keep-alive, close"), ("content-length", "0")]), body: [], keepAlive: false
                ))
        var old = AnswerParser()
        guard case .done(_, _, _, let oldKeeps) = try feed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", parser: &old) else {
            Issue.record("HTTP/1.0 answer not whole"); return
        }
        #expect(!oldKeeps)
        var extra = AnswerParser()
        guard case .done(_, _, _, let extraKeeps) = try feed("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab", parser: &extra) else {
            Issue.record("answer with extra bytes not whole"); return
        }
        #expect(!extraKeeps)
    }

    @Test func aBodyFramedByTheEndIsWholeOnlyAtTheEnd() throws {
        var parser = AnswerParser()
        #expect(try feed("HTTP/1.1 500 Internal\r\n\r\n<Error/>", parser: &parser) == .needMore)
        #expect(try parser.finish() == .done(status: 500, headers: [], body: Array("<Error/>".utf8), keepAlive: false))
    }

    @Test func anAnswerCutShortIsAReset() throws {
        for cut in [
            "", "HTTP/1.1 200 OK\r\nContent-Len", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        ] {
            var parser = AnswerParser()
            _ = try feed(cut, parser: &parser)
            #expect(throws: AnswerParser.cutShort, "\(cut.debugDescription)") { try parser.finish() }
        }
    }

    @Test func aHeadOrBodyPastItsBoundIsRefused() throws {
        var head = AnswerParser(headLimit: 64, bodyLimit: 16)
        #expect(throws: S3Error.self) { try feed("HTTP/1.1 200 OK\r\nX-Filler: " + String(repeating: "a", count: 100), parser: &head) }
        var length = AnswerParser(headLimit: 64, bodyLimit: 16)
        #expect(throws: S3Error.self) { try feed("HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n", parser: &length) }
        var chunks = AnswerParser(headLimit: 64, bodyLimit: 16)
        #expect(throws: S3Error.self) { try feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n", parser: &chunks) }
        var huge = AnswerParser()
        #expect(throws: S3Error.self) {
            try feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", parser: &huge)
        }
        var endless = AnswerParser(headLimit: 64, bodyLimit: 16)
        #expect(throws: S3Error.self) { try feed("HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "b", count: 17), parser: &endless) }
    }

    @Test(arguments: [
        "HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200 OK\r\n: empty\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
    ])
    func aMalformedAnswerIsAProtocolViolation(answer: String) {
        var parser = AnswerParser()
        #expect(throws: S3Error.self) { try feed(answer, parser: &parser) }
    }
}
