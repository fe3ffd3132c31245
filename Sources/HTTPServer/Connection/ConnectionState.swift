/// What one connection decides, apart from the bytes it moves: whether it wants to read, whether
/// the next pipelined request may be parsed, when its deadline falls and what happens then,
/// whether it survives an exchange, and how it ends (close now, or after the answer is flushed,
/// with a lingering read). Events in, decisions out; the time is a parameter (monotonic
/// nanoseconds) and there is no socket, so every timeout and ending is tested event by event.
///
/// `HTTPConnection` is the shell: it reads and writes the socket, parses, feeds bodies, and
/// does what this machine says.
struct ConnectionState {
    /// The limits of `HTTPServerConfiguration`, in nanoseconds and bytes.
    struct Limits {
        var headerTimeout: UInt64
        var idleTimeout: UInt64
        var bodyTimeout: UInt64
        var writeTimeout: UInt64
        /// How long a closing connection reads (and drops) what the client still sends.
        var linger: UInt64 = 2_000_000_000
        var responseHighWater: Int
        var discardLimit: Int

        init(_ c: HTTPServerConfiguration) {
            headerTimeout = Clock.nanoseconds(c.headerTimeout)
            idleTimeout = Clock.nanoseconds(c.idleTimeout)
            bodyTimeout = Clock.nanoseconds(c.bodyTimeout)
            writeTimeout = Clock.nanoseconds(c.writeTimeout)
            responseHighWater = c.responseHighWater
            discardLimit = c.discardLimit
        }
    }

    enum Phase: Equatable {
        case open
        /// The last answer is being flushed; then the connection lingers and closes.
        case closingWhenFlushed
        /// Half-closed: what the client still sends is read and dropped until `until`.
        case lingering(until: UInt64)
        case closed
    }

    /// What the shell does next.
    enum Action: Equatable {
        case none
        case close
        /// Answer `error` (a refusal), then close once it is flushed.
        case refuse(HTTPParseError)
        /// Shut the sending side and read what still comes until the linger deadline.
        case linger
    }

    let limits: Limits
    private(set) var phase = Phase.open
    private(set) var shuttingDown = false
    /// While shutting down, until when an idle connection may still bring one request (0: none).
    private(set) var lameDuckUntil: UInt64 = 0
    private(set) var peerClosed = false
    private(set) var served = 0
    private let openedAt: UInt64
    private(set) var headStartedAt: UInt64 = 0
    private(set) var lastActivity: UInt64
    private(set) var lastWriteProgress: UInt64 = 0

    init(limits: Limits, now: UInt64) {
        self.limits = limits
        openedAt = now
        lastActivity = now
    }

    var isClosed: Bool { phase == .closed }
    var isLingering: Bool { if case .lingering = phase { return true } else { return false } }
    var closesWhenFlushed: Bool { phase != .open }

    // MARK: reading

    /// Whether the socket should be read now: backpressure is leaving bytes in the kernel.
    func wantsRead(exchange: ExchangeState?, bodyWantsData: Bool, pendingOutbound: Int, buffered: Int) -> Bool {
        switch phase {
        case .closed: return false
        case .lingering: return true
        case .closingWhenFlushed: return false
        case .open: break
        }
        if peerClosed { return false }
        guard let exchange else { return mayTakeRequest && pendingOutbound < limits.responseHighWater }
        if exchange.bodyDone { return false }
        if exchange.discarding { return true }
        if exchange.awaitsContinue { return false }
        return buffered < 64 * 1024 && bodyWantsData
    }

    /// Whether the next pipelined request may be parsed: not while closing or shutting down
    /// (but for the lame duck's one request), and not while answers not yet sent pile up (a
    /// client that pipelines and never reads).
    func mayParseNext(pendingOutbound: Int) -> Bool {
        phase == .open && mayTakeRequest && pendingOutbound < limits.responseHighWater
    }

    private var mayTakeRequest: Bool { !shuttingDown || lameDuckUntil != 0 }

    mutating func bytesRead(now: UInt64) { lastActivity = now }

    mutating func headIncomplete(now: UInt64) { if headStartedAt == 0 { headStartedAt = now } }

    mutating func requestBegan() {
        served += 1
        headStartedAt = 0
        lameDuckUntil = 0
    }

    mutating func bodyDemanded(now: UInt64) { lastActivity = now }

    /// The exchange ended (answered, body done): the next request may come, unless shutting down.
    mutating func exchangeEnded(now: UInt64, pendingOutbound: Int) -> Action {
        lastActivity = now
        return shuttingDown ? closeWhenFlushed(pendingOutbound: pendingOutbound) : .none
    }

    /// The client closed its side (end of file): what becomes of the exchange and the connection.
    enum EndOfFile: Equatable {
        /// The body still arriving fails; the connection closes after this exchange's answer.
        case failBody(closeNow: Bool)
        /// Between requests: finish sending what is queued, then close.
        case closeAfterFlush
        case close
        case none
    }

    mutating func endOfFile(exchange: inout ExchangeState?, pendingOutbound: Int) -> EndOfFile {
        peerClosed = true
        guard var current = exchange else { return pendingOutbound > 0 ? .closeAfterFlush : .close }
        guard !current.bodyDone else { return .none }
        current.closeAfter = true
        exchange = current
        // Answered already (and discarding the rest): nothing more will come.
        return .failBody(closeNow: current.responseDone)
    }

    // MARK: writing

    mutating func wrote(now: UInt64) { lastWriteProgress = now }

    /// Closes after what is queued is flushed: at once (lingering) when nothing is queued.
    mutating func closeWhenFlushed(pendingOutbound: Int) -> Action {
        guard phase == .open || phase == .closingWhenFlushed else { return .none }
        phase = .closingWhenFlushed
        return pendingOutbound == 0 ? .linger : .none
    }

    /// Everything queued is written.
    mutating func flushed() -> Action { phase == .closingWhenFlushed ? .linger : .none }

    /// The linger begins (the shell half-closes): a client that closed already needs none.
    mutating func beginLinger(now: UInt64) -> Action {
        guard phase == .closingWhenFlushed || phase == .open else { return .none }
        if peerClosed { return .close }
        phase = .lingering(until: now + limits.linger)
        return .none
    }

    mutating func closed() { phase = .closed }

    // MARK: deadlines

    /// When the connection must have made progress (0: no deadline): the head's arrival
    /// (slowloris), the next request on a kept-alive connection, a body byte the handler waits
    /// for, a client reading its answer, the end of a linger.
    func deadline(reading: Bool, pendingOutbound: Int, exchange: ExchangeState?, bodyHasDemand: Bool) -> UInt64 {
        if case .lingering(let until) = phase { return until }
        if pendingOutbound > 0 { return lastWriteProgress + limits.writeTimeout }
        guard let exchange else {
            if lameDuckUntil != 0 {
                return headStartedAt == 0 ? lameDuckUntil : max(lameDuckUntil, headStartedAt + limits.headerTimeout)
            }
            if headStartedAt != 0 { return headStartedAt + limits.headerTimeout }
            if served == 0 { return openedAt + limits.headerTimeout }
            return lastActivity + limits.idleTimeout
        }
        if reading && (exchange.discarding || bodyHasDemand) { return lastActivity + limits.bodyTimeout }
        return 0
    }

    /// Whether the connection waits for the first byte of a request it may take. Bytes found
    /// in the socket as that wait runs out are a request on its way (a proxy reusing its pooled
    /// connection at that very moment, often the lame duck's last one): the shell reads them,
    /// under the head's own timeout (`headIncomplete`), instead of cutting them with a close.
    var awaitsRequest: Bool { phase == .open && headStartedAt == 0 && mayTakeRequest }

    /// The deadline passed: a head that did not arrive is answered 408; anything else closes.
    func timedOut(exchangeInFlight: Bool) -> Action {
        if !exchangeInFlight && headStartedAt != 0 && phase == .open {
            return .refuse(HTTPParseError(status: 408, code: "request_timeout", detail: "The request head did not arrive in time."))
        }
        return .close
    }

    // MARK: shutdown

    /// The server stops: a connection with a request in flight closes after its answer; an idle
    /// one stays open for `lameDuck` nanoseconds (0: closes now) and takes at most one more
    /// request, answered with `Connection: close`. A proxy that pooled the connection may have
    /// sent on it at this very instant; closing it now would cut that request, and a proxy cannot
    /// resend a POST or PATCH whose body it began sending.
    mutating func shutdown(exchangeInFlight: Bool, pendingOutbound: Int, now: UInt64, lameDuck: UInt64) -> Action {
        shuttingDown = true
        guard !exchangeInFlight, phase == .open else { return .none }
        if pendingOutbound > 0 { return closeWhenFlushed(pendingOutbound: pendingOutbound) }
        if lameDuck == 0 || peerClosed { return .close }
        lameDuckUntil = now + lameDuck
        return .none
    }

    // MARK: keep-alive

    /// Whether the connection closes after this answer: the client asked, the server is
    /// stopping, the client is gone, the exchange says so, the answer says so, or the handler
    /// answered before the body and the rest is not small enough to read and throw away.
    func closesAfter(_ exchange: ExchangeState, answerSaysClose: Bool, untilClose: Bool) -> Bool {
        var close = !exchange.keepAlive || shuttingDown || peerClosed || exchange.closeAfter || answerSaysClose || untilClose
        if !exchange.bodyDone {
            if exchange.awaitsContinue || exchange.chunked {
                close = true  // no 100 sent: the client may never send it; chunked: no telling how much is left
            } else if (exchange.remainingLength ?? 0) > limits.discardLimit {
                close = true
            }
        }
        return close
    }
}

/// An exchange's progress as far as decisions go (the body's bytes and the handler's task stay
/// in the shell's `Exchange`).
struct ExchangeState: Equatable {
    let keepAlive: Bool
    let expectContinue: Bool
    let chunked: Bool
    var bodyDone: Bool
    var remainingLength: Int?
    var responseStarted = false
    var responseDone = false
    var sentContinue = false
    /// Informational answers (1xx other than 100) sent before the final one.
    var informationalSent = 0
    var closeAfter = false
    /// The handler answered before reading the body: the rest is read and dropped.
    var discarding = false
    var discarded = 0

    /// Waiting for the handler to ask for the body before a `100 Continue` goes out.
    var awaitsContinue: Bool { expectContinue && !sentContinue }
}
