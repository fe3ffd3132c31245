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
        #expect(status == 503 && String(decoding: body, as: UTF8.self) == "<Error><Code>Slo" && !keepAlive)
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

    @Test func aHeadOrTrailersPastTheirBoundAreRefused() throws {
        var head = AnswerParser(headLimit: 64, bodyLimit: 16)
        #expect(throws: S3Error.self) { try feed("HTTP/1.1 200 OK\r\nX-Filler: " + String(repeating: "a", count: 100), parser: &head) }
        var trailers = AnswerParser(headLimit: 64, bodyLimit: 16)
        let endless = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + String(repeating: "X-T: y\r\n", count: 20)
        #expect(throws: S3Error.self) { try feed(endless, pieceSize: 3, parser: &trailers) }
        var line = AnswerParser()
        #expect(throws: S3Error.self) {
            try feed(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 2000) + "\r\n", parser: &line)
        }
        var interim = AnswerParser()
        #expect(throws: S3Error.self) { try feed(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 9), parser: &interim) }
    }

    @Test(arguments: [1, Int.max])
    func aBodyPastItsBoundIsKeptInPartAndAnErrorEndsAtTheAnswerLimit(pieceSize: Int) throws {
        // Of an error's long body the first bodyLimit bytes are kept (curl keeps 64 KiB); past
        // the answer limit the answer ends there, and the connection is not kept.
        var long = AnswerParser(headLimit: 64, bodyLimit: 4, answerLimit: 32)
        let step = try feed(
            "HTTP/1.1 503 Busy\r\nContent-Length: 20\r\n\r\n" + String(repeating: "z", count: 20), pieceSize: pieceSize, parser: &long)
        #expect(step == .done(status: 503, headers: fields([("content-length", "20")]), body: Array("zzzz".utf8), keepAlive: false))
        var cut = AnswerParser(headLimit: 64, bodyLimit: 4, answerLimit: 32)
        let cutStep = try feed("HTTP/1.1 502 Bad\r\n\r\n" + String(repeating: "h", count: 33), pieceSize: pieceSize, parser: &cut)
        #expect(cutStep == .done(status: 502, headers: [], body: Array("hhhh".utf8), keepAlive: false))
        var success = AnswerParser(headLimit: 64, bodyLimit: 4, answerLimit: 32)
        #expect(throws: S3Error.self) {
            try feed(
                "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n" + String(repeating: "s", count: 40), pieceSize: pieceSize, parser: &success)
        }
    }

    @Test func whatCurlTakesIsTaken() throws {
        // Lines ended by a bare LF, a line without a name, a coding that is not chunked (read to
        // the end), a coding over a length.
        var bare = AnswerParser()
        #expect(
            try feed("HTTP/1.1 200 OK\nETag: e\nnonsense\nContent-Length: 0\n\n", parser: &bare)
                == .done(status: 200, headers: fields([("etag", "e"), ("content-length", "0")]), body: [], keepAlive: true))
        var gzip = AnswerParser()
        #expect(try feed("HTTP/1.1 500 Oops\r\nTransfer-Encoding: gzip\r\n\r\nxyz", parser: &gzip) == .needMore)
        #expect(
            try gzip.finish()
                == .done(status: 500, headers: fields([("transfer-encoding", "gzip")]), body: Array("xyz".utf8), keepAlive: false))
        var both = AnswerParser()
        let step = try feed(
            "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", parser: &both)
        guard case .done(_, _, let body, let keepAlive) = step else { Issue.record("not whole: \(step)"); return }
        #expect(body == Array("ok".utf8) && keepAlive)
    }

    @Test func onlyAWholeSuccessKeepsTheConnection() throws {
        var refusal = AnswerParser()
        guard case .done(_, _, _, let keepAlive) = try feed("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", parser: &refusal) else {
            Issue.record("not whole"); return
        }
        #expect(!keepAlive)
    }

    @Test(arguments: [
        "HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 101 Switching\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1x\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
    ])
    func aMalformedAnswerIsAProtocolViolation(answer: String) {
        var parser = AnswerParser()
        #expect(throws: S3Error.self) { try feed(answer, parser: &parser) }
    }
}
