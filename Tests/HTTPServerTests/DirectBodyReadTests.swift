import Foundation
import Synchronization
import TestSupport
import Testing

@testable import HTTPServer

/// A length-framed body of 16 KiB or more is read from the socket straight into the chunks the
/// handler gets (`readBodyDirectly`, counted by `directBodyReads`). These are the ways into and
/// out of that path a client can choose: a body that waits for 100 Continue, a body the handler
/// never reads (answered early, then discarded up to the limit), and a client that stops
/// sending halfway.
@Suite(.serialized) struct DirectBodyReadTests {
    static func pattern(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 11 &+ seed) }
    }

    /// The body comes only after the 100 Continue, in odd pieces: it goes the direct way, every
    /// byte reaches the handler in order, and the request pipelined behind it is answered.
    @Test(arguments: [16 * 1024, 200 * 1024 + 3])
    func aLargeBodyAfter100ContinueArrivesWholeAndWhatFollowsIsParsed(size: Int) async throws {
        let (server, port, _) = try startServer()
        let client = try LoopbackClient(port: port)
        let body = Self.pattern(size, seed: 7)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(size)\r\nExpect: 100-continue\r\n\r\n")
        #expect(try client.readLine() == "HTTP/1.1 100 Continue")
        #expect(try client.readLine() == "")
        let rest = body + Array("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n".utf8)
        var offset = 0
        while offset < rest.count {
            let end = min(offset + 9_973, rest.count)
            try client.send(rest[offset..<end])
            offset = end
        }
        let echoed = try client.readResponse(timeout: 20)
        #expect(echoed.status == 200 && echoed.body == body)
        #expect(try client.readResponse().text == "hello")
        #expect(server.directBodyReads > 0, "the body did not take the direct path")
        await server.shutdown(grace: 1)
    }

    /// Answered before its body is read, a body of up to the discard limit left to come is read
    /// and dropped and the request behind it answered, whether the answer came before any of
    /// the body or halfway; one byte more and the answer closes the connection instead.
    @Test(arguments: [
        (256 * 1024, 0, true), (256 * 1024 + 1, 0, false), (200 * 1024, 100 * 1024, true),
    ])
    func anUnreadBodyUpToTheDiscardLimitIsDroppedAndTheConnectionKept(size: Int, before: Int, kept: Bool) async throws {
        let (server, port, _) = try startServer()
        #expect(server.configuration.discardLimit == 256 * 1024)
        let client = try LoopbackClient(port: port)
        let body = Self.pattern(size, seed: 3)
        try client.send(Array("POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: \(size)\r\n\r\n".utf8) + body[..<before])
        let early = try client.readResponse()
        #expect(early.status == 413)
        #expect((early.header("connection") != "close") == kept)
        if kept {
            try client.send(Array(body[before...]) + Array("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
            #expect(try client.readResponse(timeout: 10).text == "hello")
        } else {
            #expect(client.closedByPeer(within: 5))
        }
        if before == 0 {
            // Answered before any of it came, the body is discarding from its first byte. (Bytes
            // that come before the answer may go the direct way into the body's queue, which
            // holds them until the handler reads or answers.)
            #expect(server.directBodyReads == 0, "a body already refused went into a handler's chunk")
        }
        await server.shutdown(grace: 1)
    }

    /// A client that sends half of a 1 MiB body and then shuts its side: the handler's read
    /// fails (no answer claims the body arrived), and the connection is gone well before the
    /// body timeout, leaving nothing open.
    @Test func aClientThatStopsHalfwayThroughALargeBodyIsLetGoAtOnce() async throws {
        let (server, port, responder) = try startServer { $0.bodyTimeout = 30 }
        do {
            let client = try LoopbackClient(port: port)
            let size = 1 << 20
            try client.send(
                Array("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(size)\r\n\r\n".utf8) + Self.pattern(size / 2, seed: 1))
            client.shutdownWrite()
            let answer = try client.readToEnd(timeout: 10)
            let text = String(decoding: answer, as: UTF8.self)
            #expect(!text.hasPrefix("HTTP/1.1 200"), "a body cut short was answered as whole: \(text.prefix(80))")
        }
        #expect(eventually(timeout: 10) { responder.observations.bodyErrors.withLock { $0 } == 1 }, "the handler never learnt")
        #expect(eventually(timeout: 10) { server.openConnections == 0 }, "the half-closed connection was kept")
        #expect(server.directBodyReads > 0, "the body did not take the direct path")
        await server.shutdown(grace: 1)
    }
}
