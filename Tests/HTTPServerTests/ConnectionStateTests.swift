import Testing

@testable import HTTPServer

/// The connection's decisions, event by event, on a manual clock: no socket, no sleep.
@Suite struct ConnectionStateTests {
    static let second: UInt64 = 1_000_000_000

    /// Header 10 s, idle 60 s, body 30 s, write 20 s, linger 2 s; 256 KiB high water and discard.
    static func machine(at now: UInt64 = 1_000 * second) -> ConnectionState {
        var configuration = HTTPServerConfiguration()
        configuration.bodyTimeout = 30
        configuration.writeTimeout = 20
        return ConnectionState(limits: ConnectionState.Limits(configuration), now: now)
    }

    static func exchange(
        keepAlive: Bool = true, expectContinue: Bool = false, chunked: Bool = false,
        bodyDone: Bool = true, remaining: Int? = 0
    ) -> ExchangeState {
        ExchangeState(
            keepAlive: keepAlive, expectContinue: expectContinue, chunked: chunked, bodyDone: bodyDone,
            remainingLength: remaining)
    }

    @Test func aHeadThatNeverCompletesIsAnswered408AfterTheHeaderTimeout() {
        let start = 1_000 * Self.second
        var state = Self.machine(at: start)
        // A silent connection has until the header timeout from its opening.
        #expect(state.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + 10 * Self.second)
        state.headIncomplete(now: start + 3 * Self.second)
        state.headIncomplete(now: start + 8 * Self.second)  // more bytes of the same head: the clock does not restart
        #expect(state.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + 13 * Self.second)
        #expect(
            state.timedOut(exchangeInFlight: false)
                == .refuse(
                    HTTPParseError(
                        status: 408, code: "request_timeout",
                        detail: "The request head did not arrive in time.")))
    }

    @Test func anIdleKeptAliveConnectionClosesAfterTheIdleTimeout() {
        let start = 1_000 * Self.second
        var state = Self.machine(at: start)
        state.requestBegan()
        #expect(state.exchangeEnded(now: start + 5 * Self.second, pendingOutbound: 0) == .none)
        #expect(state.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + 65 * Self.second)
        #expect(state.timedOut(exchangeInFlight: false) == .close, "between requests a timeout closes quietly")
    }

    @Test func aStalledBodyOrAStalledReaderTimesOut() {
        let start = 1_000 * Self.second
        var state = Self.machine(at: start)
        state.requestBegan()
        let uploading = Self.exchange(bodyDone: false, remaining: 1_000_000)
        // The handler waits for body bytes: each byte moves the deadline.
        state.bytesRead(now: start + 4 * Self.second)
        #expect(state.deadline(reading: true, pendingOutbound: 0, exchange: uploading, bodyHasDemand: true) == start + 34 * Self.second)
        // Nobody asked for the body yet: no deadline.
        #expect(state.deadline(reading: true, pendingOutbound: 0, exchange: uploading, bodyHasDemand: false) == 0)
        // A client that reads nothing of its answer: the write timeout from the last progress.
        state.wrote(now: start + 50 * Self.second)
        #expect(state.deadline(reading: false, pendingOutbound: 10, exchange: uploading, bodyHasDemand: true) == start + 70 * Self.second)
        #expect(state.timedOut(exchangeInFlight: true) == .close)
    }

    @Test func closingLingersThenCloses() {
        let start = 1_000 * Self.second
        var state = Self.machine(at: start)
        // Answer still queued: wait for the flush, then linger.
        #expect(state.closeWhenFlushed(pendingOutbound: 100) == .none)
        #expect(state.closesWhenFlushed && !state.mayParseNext(pendingOutbound: 0))
        #expect(!state.wantsRead(exchange: nil, bodyWantsData: false, pendingOutbound: 100, buffered: 0))
        #expect(state.flushed() == .linger)
        #expect(state.beginLinger(now: start + Self.second) == .none)
        #expect(state.isLingering && state.wantsRead(exchange: nil, bodyWantsData: false, pendingOutbound: 0, buffered: 0))
        #expect(state.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + 3 * Self.second)
        #expect(state.timedOut(exchangeInFlight: false) == .close, "the linger's end closes")
        // A client that has gone already needs no linger.
        var gone = Self.machine(at: start)
        var none: ExchangeState?
        #expect(gone.endOfFile(exchange: &none, pendingOutbound: 5) == .closeAfterFlush)
        #expect(gone.closeWhenFlushed(pendingOutbound: 0) == .linger)
        #expect(gone.beginLinger(now: start) == .close)
    }

    @Test func pipelinedRequestsWaitWhileAnswersPileUp() {
        let state = Self.machine()
        #expect(state.mayParseNext(pendingOutbound: 0))
        #expect(state.mayParseNext(pendingOutbound: 256 * 1024 - 1))
        #expect(!state.mayParseNext(pendingOutbound: 256 * 1024), "a client that pipelines and never reads is held back")
        #expect(!state.wantsRead(exchange: nil, bodyWantsData: false, pendingOutbound: 256 * 1024, buffered: 0))
    }

    @Test func shutdownClosesIdleConnectionsAndWaitsForRequestsInFlight() {
        var idle = Self.machine()
        #expect(idle.shutdown(exchangeInFlight: false, pendingOutbound: 0, now: 0, lameDuck: 0) == .close)
        var draining = Self.machine()
        #expect(draining.shutdown(exchangeInFlight: false, pendingOutbound: 50, now: 0, lameDuck: Self.second) == .none)
        #expect(draining.closesWhenFlushed && draining.flushed() == .linger)
        var busy = Self.machine()
        #expect(busy.shutdown(exchangeInFlight: true, pendingOutbound: 0, now: 0, lameDuck: Self.second) == .none)
        #expect(!busy.mayParseNext(pendingOutbound: 0), "no new request once shutting down")
        #expect(busy.closesAfter(Self.exchange(), answerSaysClose: false, untilClose: false), "the answer says Connection: close")
        #expect(busy.exchangeEnded(now: 0, pendingOutbound: 0) == .linger)
    }

    /// A balancer's pooled connection may carry a request at the instant of SIGTERM: an idle
    /// connection serves one more request in the lame-duck window, answered `Connection: close`,
    /// and closes when the window passes without one.
    @Test func anIdleConnectionServesOneMoreRequestInTheLameDuckWindow() {
        let start = 1_000 * Self.second
        var idle = Self.machine(at: start)
        idle.requestBegan()
        _ = idle.exchangeEnded(now: start, pendingOutbound: 0)
        #expect(idle.shutdown(exchangeInFlight: false, pendingOutbound: 0, now: start + Self.second, lameDuck: Self.second) == .none)
        #expect(idle.wantsRead(exchange: nil, bodyWantsData: false, pendingOutbound: 0, buffered: 0))
        #expect(idle.mayParseNext(pendingOutbound: 0), "the request already on its way is parsed")
        #expect(idle.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + 2 * Self.second)
        idle.headIncomplete(now: start + 2 * Self.second - 1)
        #expect(
            idle.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + 12 * Self.second - 1,
            "a head that began in the window has the header timeout to arrive")
        idle.requestBegan()
        #expect(!idle.mayParseNext(pendingOutbound: 0), "one request only")
        #expect(idle.closesAfter(Self.exchange(), answerSaysClose: false, untilClose: false), "its answer says Connection: close")
        #expect(idle.exchangeEnded(now: start + 3 * Self.second, pendingOutbound: 0) == .linger)

        var quiet = Self.machine(at: start)
        #expect(quiet.shutdown(exchangeInFlight: false, pendingOutbound: 0, now: start, lameDuck: Self.second) == .none)
        #expect(quiet.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + Self.second)
        #expect(quiet.timedOut(exchangeInFlight: false) == .close, "no request in the window: closed without an answer")
    }

    /// Bytes waiting in the socket when the window runs out are a request on its way: read under
    /// the header timeout, once; not once a head is under way, nor when no request may come.
    @Test func aRequestWaitingAtTheDeadlineIsReadNotCut() {
        let start = 1_000 * Self.second
        var idle = Self.machine(at: start)
        #expect(idle.shutdown(exchangeInFlight: false, pendingOutbound: 0, now: start, lameDuck: Self.second) == .none)
        #expect(idle.awaitsRequest)
        idle.headIncomplete(now: start + Self.second)
        #expect(idle.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + 11 * Self.second)
        #expect(idle.mayParseNext(pendingOutbound: 0))
        #expect(!idle.awaitsRequest, "a head under way has had its extension")
        #expect(
            idle.timedOut(exchangeInFlight: false)
                == .refuse(HTTPParseError(status: 408, code: "request_timeout", detail: "The request head did not arrive in time.")))

        var served = Self.machine(at: start)
        #expect(served.shutdown(exchangeInFlight: false, pendingOutbound: 0, now: start, lameDuck: Self.second) == .none)
        served.requestBegan()
        #expect(!served.awaitsRequest, "the lame duck's one request was taken")
        var closing = Self.machine(at: start)
        #expect(closing.shutdown(exchangeInFlight: false, pendingOutbound: 0, now: start, lameDuck: 0) == .close)
        #expect(!closing.awaitsRequest, "no lame duck: no request")

        var keptAlive = Self.machine(at: start)
        keptAlive.requestBegan()
        _ = keptAlive.exchangeEnded(now: start, pendingOutbound: 0)
        #expect(keptAlive.awaitsRequest, "the idle timeout's own race")
        keptAlive.headIncomplete(now: start + 60 * Self.second)
        #expect(keptAlive.deadline(reading: true, pendingOutbound: 0, exchange: nil, bodyHasDemand: false) == start + 70 * Self.second)
    }

    @Test func aClientThatClosesMidBodyFailsTheBody() {
        var state = Self.machine()
        var uploading: ExchangeState? = Self.exchange(bodyDone: false, remaining: 100)
        #expect(state.endOfFile(exchange: &uploading, pendingOutbound: 0) == .failBody(closeNow: false))
        #expect(uploading?.closeAfter == true && state.peerClosed)
        #expect(!state.wantsRead(exchange: uploading, bodyWantsData: true, pendingOutbound: 0, buffered: 0))
        var answered = Self.machine()
        var discarding: ExchangeState? = Self.exchange(bodyDone: false, remaining: 100)
        discarding?.responseDone = true
        #expect(answered.endOfFile(exchange: &discarding, pendingOutbound: 0) == .failBody(closeNow: true))
    }

    @Test(arguments: [
        // keepAlive, expectContinue (sent?), chunked, bodyDone, remaining, answer says close → closes?
        (true, false, false, true, 0, false, false),
        (false, false, false, true, 0, false, true),  // HTTP/1.0 without keep-alive, or Connection: close asked
        (true, false, false, true, 0, true, true),  // the answer says close
        (true, false, false, false, 1_000, false, false),  // answered early, a small rest: read and dropped
        (true, false, false, false, 300_000, false, true),  // answered early, too much left to drop
        (true, false, true, false, 0, false, true),  // chunked, unfinished: no telling how much is left
        (true, true, false, false, 10, false, true),  // 100-continue never sent: the body may never come
    ])
    func keepAliveIsDecidedPerExchange(
        _ keepAlive: Bool, _ expectContinue: Bool, _ chunked: Bool, _ bodyDone: Bool,
        _ remaining: Int, _ answerSaysClose: Bool, _ closes: Bool
    ) {
        let state = Self.machine()
        let exchange = Self.exchange(
            keepAlive: keepAlive, expectContinue: expectContinue, chunked: chunked, bodyDone: bodyDone,
            remaining: remaining)
        #expect(state.closesAfter(exchange, answerSaysClose: answerSaysClose, untilClose: false) == closes)
        #expect(state.closesAfter(exchange, answerSaysClose: false, untilClose: true), "a body delimited by the close closes")
    }

    @Test func backpressureDecidesWhatIsRead() {
        let state = Self.machine()
        let awaiting = Self.exchange(expectContinue: true, bodyDone: false, remaining: 10)
        #expect(!state.wantsRead(exchange: awaiting, bodyWantsData: true, pendingOutbound: 0, buffered: 0), "no read before the 100")
        let uploading = Self.exchange(bodyDone: false, remaining: 10)
        #expect(state.wantsRead(exchange: uploading, bodyWantsData: true, pendingOutbound: 0, buffered: 0))
        #expect(!state.wantsRead(exchange: uploading, bodyWantsData: false, pendingOutbound: 0, buffered: 0), "the handler is behind")
        #expect(!state.wantsRead(exchange: uploading, bodyWantsData: true, pendingOutbound: 0, buffered: 64 * 1024))
        var dropping = uploading
        dropping.discarding = true
        #expect(state.wantsRead(exchange: dropping, bodyWantsData: false, pendingOutbound: 0, buffered: 64 * 1024))
    }
}
