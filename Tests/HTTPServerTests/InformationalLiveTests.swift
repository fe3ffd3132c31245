import Foundation
import TestSupport
import Testing

@testable import HTTPServer

/// Informational answers (`HTTPRequest.sendInformational`) on a real socket: they go out before
/// the body is read and before the final answer, `100 Continue` still follows when the client
/// waits for it, and an HTTP/1.0 client never sees one.
@Suite struct InformationalLiveTests {
    @Test func a104GoesOutBeforeTheBodyAndTheContinueStillFollows() async throws {
        let (server, port, _) = try startServer()
        let client = try LoopbackClient(port: port)
        try client.send("POST /informed HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        // Nothing of the body is sent yet: the 104 cannot have waited for it.
        let interim = try client.readResponse()
        #expect(interim.status == 104)
        #expect(interim.header("location") == "/somewhere")
        #expect(interim.header("x-seen") == "0")
        #expect(interim.header("content-length") == nil && interim.header("date") == nil)
        #expect(try client.readLine() == "HTTP/1.1 100 Continue")
        #expect(try client.readLine() == "")
        try client.send("data")
        // The handler's second one, sent once it had read the body, still comes first.
        #expect(try client.readResponse().status == 103)
        let final = try client.readResponse()
        #expect(final.status == 200)
        #expect(final.text == "informed=true refused=[100, 101, 200] body=4 after=true")
        await server.shutdown(grace: 1)
    }

    @Test func aBodySentWithTheHeadGetsThe104FirstAndTheConnectionIsKept() async throws {
        let (server, port, _) = try startServer()
        let client = try LoopbackClient(port: port)
        try client.send("POST /informed HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
        #expect(try client.readResponse().status == 104)
        #expect(try client.readResponse().status == 103)
        let final = try client.readResponse()
        #expect(final.status == 200 && final.text.hasPrefix("informed=true"))
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.readResponse().text == "hello")
        await server.shutdown(grace: 1)
    }

    @Test func anHTTP10ClientGetsNoInformationalAnswer() async throws {
        let (server, port, _) = try startServer()
        let client = try LoopbackClient(port: port)
        try client.send("POST /informed HTTP/1.0\r\nContent-Length: 4\r\n\r\ndata")
        let final = try client.readResponse()
        #expect(final.status == 200)
        #expect(final.text == "informed=false refused=[100, 101, 200] body=4 after=false")
        await server.shutdown(grace: 1)
    }
}
