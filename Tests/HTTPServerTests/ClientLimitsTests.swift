import Foundation
import TestSupport
import Testing

@testable import HTTPServer

/// Who a request comes from, how many connections one client may hold, and what a client that
/// goes away leaves behind.
@Suite(.serialized) struct ClientLimitsTests {
    @Test func addressBlocksMatchTheirAddresses() throws {
        let ten = try #require(AddressBlock("10.0.0.0/8"))
        #expect(ten.contains("10.255.1.2") && !ten.contains("11.0.0.1") && ten.contains("::ffff:10.1.2.3"))
        #expect(try #require(AddressBlock("192.0.2.7")).contains("192.0.2.7"))
        #expect(!(try #require(AddressBlock("192.0.2.7"))).contains("192.0.2.8"))
        let v6 = try #require(AddressBlock("fd00::/8"))
        #expect(v6.contains("fd12::1") && !v6.contains("fe80::1") && !v6.contains("10.0.0.1"))
        for bad in ["", "10.0.0.0/33", "10.0.0/8", "host.example", "10.0.0.0/-1", "::1/129", "10.0.0.0/8x"] {
            #expect(AddressBlock(bad) == nil, "\(bad)")
        }
    }

    @Test func forwardedForIsBelievedOnlyFromTrustedProxies() {
        let proxies = [AddressBlock("10.0.0.0/8")!]
        #expect(ForwardedClient.resolve(peer: "10.1.1.1", forwardedFor: ["203.0.113.5"], trusted: proxies) == "203.0.113.5")
        // The rightmost address that is not a trusted proxy is the client; what it claims before is not believed.
        #expect(
            ForwardedClient.resolve(peer: "10.1.1.1", forwardedFor: ["1.2.3.4, 203.0.113.5, 10.2.2.2"], trusted: proxies) == "203.0.113.5")
        #expect(ForwardedClient.resolve(peer: "198.51.100.9", forwardedFor: ["203.0.113.5"], trusted: proxies) == "198.51.100.9")
        #expect(ForwardedClient.resolve(peer: "10.1.1.1", forwardedFor: ["not-an-ip"], trusted: proxies) == "10.1.1.1")
        #expect(ForwardedClient.resolve(peer: "10.1.1.1", forwardedFor: ["[2001:db8::1]"], trusted: proxies) == "2001:db8::1")
        #expect(ForwardedClient.resolve(peer: "10.1.1.1", forwardedFor: [], trusted: proxies) == "10.1.1.1")
    }

    @Test func aClientThatHangsUpCancelsItsHandler() async throws {
        let (server, port, responder) = try startServer()
        do {
            let client = try LoopbackClient(port: port)
            try client.send("GET /hang HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(eventually { responder.observations.seen.withLock { $0 } == 1 })
        }
        let started = Date()
        #expect(eventually(timeout: 5) { responder.observations.cancelled.withLock { $0 } == 1 })
        #expect(Date().timeIntervalSince(started) < 2, "the handler ran on after its client left")
        #expect(eventually { server.openConnections == 0 })
        await server.shutdown(grace: 1)
    }

    @Test func oneAddressMayHoldOnlyItsShareOfConnections() async throws {
        let (server, port, _) = try startServer { $0.maxConnectionsPerClient = 3 }
        var held: [LoopbackClient] = []
        for _ in 0..<3 {
            let client = try LoopbackClient(port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            held.append(client)
        }
        let extra = try LoopbackClient(port: port)
        #expect(try extra.readResponse().status == 429)
        #expect(extra.closedByPeer(within: 3))
        held.removeFirst()
        #expect(eventually { server.openConnections == 2 })
        let again = try LoopbackClient(port: port)
        try again.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try again.readResponse().status == 200)
        await server.shutdown(grace: 1)
    }

    @Test func behindATrustedProxyEachForwardedClientIsCounted() async throws {
        let (server, port, responder) = try startServer {
            $0.maxConnectionsPerClient = 1
            $0.trustedProxies = [AddressBlock("127.0.0.0/8")!]
        }
        // The proxy's own address is not capped: two connections from it carry two clients.
        let a = try LoopbackClient(port: port), b = try LoopbackClient(port: port), c = try LoopbackClient(port: port)
        try a.send("GET /who HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 203.0.113.5\r\n\r\n")
        try b.send("GET /who HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 198.51.100.7\r\n\r\n")
        #expect(eventually { responder.observations.seen.withLock { $0 } == 2 })
        // A second request in flight for 203.0.113.5 is one too many.
        try c.send("GET /who HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 203.0.113.5\r\n\r\n")
        #expect(try c.readResponse().status == 429)
        responder.observations.release.withLock { $0 = true }
        #expect(try a.readResponse().text == "203.0.113.5")
        #expect(try b.readResponse().text == "198.51.100.7")
        await server.shutdown(grace: 1)
    }
}
