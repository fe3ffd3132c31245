import Testing

@testable import HTTPServer

/// When a handler's informational answer may go out (`ConnectionState.mayInform`), case by case.
@Suite struct ConnectionStateInformationalTests {
    static func machine() -> ConnectionState { ConnectionStateTests.machine() }

    @Test(arguments: [
        (99, false), (100, false), (101, false), (102, true), (103, true), (104, true), (199, true), (200, false), (204, false),
    ])
    func onlyStatusesOf102To199(status: Int, allowed: Bool) {
        let exchange = ConnectionStateTests.exchange(bodyDone: false, remaining: 10)
        #expect(Self.machine().mayInform(status: status, version: .http11, exchange: exchange) == allowed)
    }

    @Test func neverToAnHTTP10Client() {
        let exchange = ConnectionStateTests.exchange(bodyDone: false, remaining: 10)
        #expect(!Self.machine().mayInform(status: 104, version: .http10, exchange: exchange))
    }

    @Test func neverOnceTheFinalAnswerHasStarted() {
        var exchange = ConnectionStateTests.exchange(bodyDone: false, remaining: 10)
        exchange.responseStarted = true
        #expect(!Self.machine().mayInform(status: 104, version: .http11, exchange: exchange))
        exchange.responseStarted = false
        exchange.responseDone = true
        #expect(!Self.machine().mayInform(status: 104, version: .http11, exchange: exchange))
    }

    @Test func beforeTheBodyIsAskedForEvenWhenTheClientAwaitsAContinue() {
        let exchange = ConnectionStateTests.exchange(expectContinue: true, bodyDone: false, remaining: 10)
        #expect(exchange.awaitsContinue)
        #expect(Self.machine().mayInform(status: 104, version: .http11, exchange: exchange))
    }

    @Test func notOnAClosingConnectionNorToAClientThatHungUp() {
        let exchange = ConnectionStateTests.exchange(bodyDone: false, remaining: 10)
        var closing = Self.machine()
        _ = closing.closeWhenFlushed(pendingOutbound: 10)
        #expect(!closing.mayInform(status: 104, version: .http11, exchange: exchange))
        var hungUp = Self.machine()
        var current: ExchangeState? = exchange
        _ = hungUp.endOfFile(exchange: &current, pendingOutbound: 0)
        #expect(!hungUp.mayInform(status: 104, version: .http11, exchange: current ?? exchange))
    }

    @Test func atMostTheLimitPerExchange() {
        var exchange = ConnectionStateTests.exchange(bodyDone: false, remaining: 10)
        exchange.informationalSent = ConnectionState.informationalLimit - 1
        #expect(Self.machine().mayInform(status: 104, version: .http11, exchange: exchange))
        exchange.informationalSent += 1
        #expect(!Self.machine().mayInform(status: 104, version: .http11, exchange: exchange))
    }
}
