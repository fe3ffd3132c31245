import CSystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One client connection: reads and parses requests, hands each to the responder in order,
/// streams bodies both ways with backpressure, and enforces the timeouts.
///
/// Confinement: every `var` here is read and written only on the thread of `loop`, the event
/// loop that owns the connection, which is what makes the `@unchecked Sendable` sound;
/// `deadline` is atomic because the server's sweeper reads it from its own queue. Requests are
/// answered one at a time, so pipelined requests wait in the socket (unread) and their answers
/// go out in order.
final class HTTPConnection: EventLoopHandler, @unchecked Sendable {
    let fd: Int32
    let remoteAddress: String
    /// The peer's numeric address, and whether it is a proxy trusted to name its clients.
    let peerAddress: String
    let peerIsProxy: Bool
    let loop: EventLoop
    private let context: ServerContext
    /// Uptime nanoseconds at which `onTimeout` should run; 0 for none.
    let deadline = Atomic<UInt64>(0)

    /// The kernel may hold unread bytes (edge-triggered: cleared only by a would-block read).
    private var socketReadable = true
    private var inReadLoop = false
    private var readScheduled = false
    private var writeInterest = false
    private var inbound = InboundBuffer()
    private var parser: HTTPHeadParser
    private var exchange: Exchange?
    private var outbound: [UInt8] = []
    private var outboundOffset = 0
    private var drainWaiters: [CheckedContinuation<Void, any Error>] = []
    private var closeWhenFlushed = false
    private var lingering = false
    private var lingered = 0
    private var closed = false
    private var shuttingDown = false
    private var peerClosed = false
    private var served = 0
    private let openedAt: UInt64
    private var headStartedAt: UInt64 = 0
    private var lastActivity: UInt64
    private var lastWriteProgress: UInt64 = 0
    private var lingerUntil: UInt64 = 0
    private var date = HTTPDate()

    private static let readEvents = TG_EPOLLIN | TG_EPOLLRDHUP | TG_EPOLLET
    private static let readWriteEvents = readEvents | TG_EPOLLOUT

    init(fd: Int32, remoteAddress: String, peerAddress: String, loop: EventLoop, context: ServerContext) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.peerAddress = peerAddress
        self.peerIsProxy = context.configuration.trustedProxies.contains(address: peerAddress)
        self.loop = loop
        self.context = context
        self.parser = HTTPHeadParser(limits: context.configuration.limits)
        self.openedAt = Clock.now()
        self.lastActivity = openedAt
    }

    // MARK: lifecycle

    func start() {
        guard !closed else { return }
        loop.register(fd, events: Self.readEvents, handler: self)
        onReadable()
    }

    func onEvent(_ events: UInt32) {
        let failed = events & (TG_EPOLLERR | TG_EPOLLHUP) != 0
        if failed || events & TG_EPOLLRDHUP != 0 { peerHungUp() }
        if events & (TG_EPOLLIN | TG_EPOLLRDHUP) != 0 || failed {
            socketReadable = true
            onReadable()
        }
        if (events & TG_EPOLLOUT != 0 || failed) && !closed && outboundOffset < outbound.count {
            onWritable()
        }
    }

    /// Stops after the request in flight; an idle connection closes now.
    func beginShutdown() {
        shuttingDown = true
        if exchange == nil && !closeWhenFlushed { pendingOutbound > 0 ? closeAfterFlush() : close() }
    }

    func close() {
        guard !closed else { return }
        closed = true
        deadline.store(0, ordering: .relaxed)
        exchange?.body.fail(.connectionClosed)
        if let exchange, !exchange.responseDone { exchange.handlerTask?.cancel() }
        if let counted = exchange?.countedClient {
            exchange?.countedClient = nil
            context.give(counted)
        }
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter.resume(throwing: ResponseWriteError()) }
        loop.deregister(fd)
        SystemCall.close(fd)
        context.connectionClosed(self)
    }

    // MARK: reading

    /// Reads while the connection wants bytes and the kernel has them. Bounded per call so one
    /// busy client cannot starve the others on this loop.
    private func onReadable() {
        guard !closed, !inReadLoop else { return }
        inReadLoop = true
        var rounds = 0
        while !closed && socketReadable {
            if lingering {
                lingerRead()
                continue
            }
            guard wantsRead() else { break }
            rounds += 1
            if rounds > 16 {
                scheduleRead()
                break
            }
            switch inbound.read(from: fd) {
            case .bytes:
                lastActivity = Clock.now()
                process()
            case .wouldBlock:
                socketReadable = false
            case .endOfFile:
                socketReadable = false
                peerClosed = true
                peerHungUp()
                if let exchange {
                    if !exchange.bodyDone {
                        exchange.body.fail(.connectionClosed)
                        exchange.closeAfter = true
                        // Answered already (and discarding the rest): nothing more will come.
                        if exchange.responseDone { closeAfterFlush() }
                    }
                } else {
                    // A half-close after the last request: finish sending what is queued first.
                    pendingOutbound > 0 ? closeAfterFlush() : close()
                }
            case .failed:
                close()
            }
        }
        inReadLoop = false
        updateInterest()
    }

    /// The client shut its side (or the connection failed) while its request is in flight:
    /// nobody waits for the answer, so the handler's task is cancelled (a long poll frees its
    /// slot at once). A body still arriving fails on its own; handlers that must finish what
    /// they started (an upload's bookkeeping) shield that work from cancellation.
    private func peerHungUp() {
        guard let exchange, !exchange.responseDone else { return }
        exchange.handlerTask?.cancel()
    }

    private func scheduleRead() {
        guard !readScheduled else { return }
        readScheduled = true
        loop.execute {
            self.readScheduled = false
            self.onReadable()
        }
    }

    /// Moves as far as the buffered bytes allow: parses heads, feeds bodies.
    private func process() {
        while !closed {
            if let exchange {
                guard pumpBody(exchange) else { break }
                continue
            }
            if inbound.isEmpty || closeWhenFlushed || shuttingDown { break }
            // Answers not yet sent hold the next request back: a client that pipelines and
            // never reads cannot make the server queue responses without bound.
            if pendingOutbound >= context.configuration.responseHighWater { break }
            let outcome = inbound.withReadableBytes { parser.parse($0) }
            switch outcome {
            case .incomplete:
                if headStartedAt == 0 { headStartedAt = Clock.now() }
                updateInterest()
                return
            case .invalid(let error):
                refuse(error)
                return
            case .complete(let head, let consumed):
                inbound.consume(consumed)
                parser.reset()
                headStartedAt = 0
                begin(head)
            }
        }
        updateInterest()
    }

    private func begin(_ head: HTTPRequestHead) {
        var client: String?
        if peerIsProxy {
            // Behind a trusted proxy the cap counts each forwarded client's requests in flight.
            let forwarded = ForwardedClient.resolve(peer: peerAddress, forwardedFor: head.headers.values("x-forwarded-for"),
                                                    trusted: context.configuration.trustedProxies)
            guard context.take(forwarded) else {
                return refuse(HTTPParseError(status: 429, code: "client_connection_limit",
                                             detail: "This client has too many requests in flight."))
            }
            client = forwarded
        }
        served += 1
        let body: RequestBody
        var bodyArrivedWithHead = false
        switch head.framing {
        case .none:
            body = RequestBody.shared
        case .length(let n) where n <= inbound.readableCount && n <= context.configuration.bodyHighWater
                                  && !head.expectContinue:
            // The usual small JSON body, already here with its head: handed over whole.
            body = RequestBody.whole(inbound.copy(0..<n))
            inbound.consume(n)
            bodyArrivedWithHead = true
        case .length(let n):
            body = RequestBody(expectedLength: n, highWater: context.configuration.bodyHighWater,
                               onDemand: demandHandler())
        case .chunked:
            body = RequestBody(expectedLength: nil, highWater: context.configuration.bodyHighWater,
                               onDemand: demandHandler())
        }
        let exchange = Exchange(head: head, body: body, limits: context.configuration.limits, bodyArrived: bodyArrivedWithHead)
        self.exchange = exchange
        exchange.countedClient = client
        let request = HTTPRequest(head: head, body: body, remoteAddress: remoteAddress, clientAddress: client, server: context)
        let responder = context.responder
        exchange.handlerTask = Task(executorPreference: loop) {
            let response = await responder.respond(to: request)
            await self.send(response, for: exchange)
        }
    }

    private func demandHandler() -> RequestBody.DemandHandler {
        { [weak self] in
            guard let self else { return }
            self.loop.execute { self.onBodyDemand() }
        }
    }

    private func onBodyDemand() {
        guard !closed, let exchange, !exchange.bodyDone else { return }
        if exchange.head.expectContinue && !exchange.sentContinue {
            // Once a final response has started, a 100 would be out of place; the client
            // sends the body anyway (RFC 9110 §10.1.1), and the body timeout still applies.
            exchange.sentContinue = true
            if !exchange.responseStarted { enqueue(ResponseHead.continueLine[...]) }
        }
        lastActivity = Clock.now()
        process()
    }

    /// Feeds buffered bytes to the current body. Returns true when the exchange ended and the
    /// next request may be parsed.
    private func pumpBody(_ exchange: Exchange) -> Bool {
        while !exchange.bodyDone && !inbound.isEmpty {
            if !exchange.discarding {
                if exchange.head.expectContinue && !exchange.sentContinue { return false }
                guard exchange.body.wantsData else { return false }
            }
            let step: ChunkedDecoder.Step
            do {
                step = try exchange.decode(&inbound)
            } catch {
                bodyMalformed(exchange, error as? HTTPParseError ?? .badChunk("The chunked body is malformed."))
                return false
            }
            if exchange.discarding {
                exchange.discarded += step.consumed
                if exchange.discarded > context.configuration.discardLimit {
                    exchange.bodyDone = true
                    closeAfterFlush()
                    return false
                }
            }
            if let data = step.data, !data.isEmpty {
                if exchange.discarding {
                    // Thrown away: the handler answered without it.
                } else {
                    exchange.body.deliver(inbound.copy(data)[...])
                }
            }
            inbound.consume(step.consumed)
            if step.finished {
                exchange.bodyDone = true
                exchange.body.finish()
            }
        }
        if exchange.bodyDone && exchange.responseDone {
            finishExchange()
            return true
        }
        return false
    }

    private func bodyMalformed(_ exchange: Exchange, _ error: HTTPParseError) {
        exchange.body.fail(.malformed(error))
        exchange.bodyDone = true
        exchange.closeAfter = true
        if exchange.responseDone { closeAfterFlush() }
    }

    private func finishExchange() {
        if let counted = exchange?.countedClient { context.give(counted) }
        exchange = nil
        lastActivity = Clock.now()
        if shuttingDown { closeAfterFlush() }
    }

    private func wantsRead() -> Bool {
        if closed { return false }
        if lingering { return true }
        if closeWhenFlushed || peerClosed { return false }
        guard let exchange else { return !shuttingDown && pendingOutbound < context.configuration.responseHighWater }
        if exchange.bodyDone { return false }
        if exchange.discarding { return true }
        if exchange.head.expectContinue && !exchange.sentContinue { return false }
        return inbound.readableCount < 64 * 1024 && exchange.body.wantsData
    }

    /// Reads again if bytes are wanted and may be waiting, and moves the deadline. With
    /// edge-triggered events nothing else would notice bytes that arrived while we did not want
    /// them; when we did not want them we simply left them in the kernel (backpressure).
    private func updateInterest() {
        guard !closed else { return }
        let want = wantsRead()
        if want && socketReadable && !inReadLoop { scheduleRead() }
        deadline.store(nextDeadline(reading: want), ordering: .relaxed)
    }

    private func nextDeadline(reading: Bool) -> UInt64 {
        let c = context.configuration
        if lingering { return lingerUntil }
        if outboundOffset < outbound.count { return lastWriteProgress + Clock.nanoseconds(c.writeTimeout) }
        guard let exchange else {
            if headStartedAt != 0 { return headStartedAt + Clock.nanoseconds(c.headerTimeout) }
            if served == 0 { return openedAt + Clock.nanoseconds(c.headerTimeout) }
            return lastActivity + Clock.nanoseconds(c.idleTimeout)
        }
        if reading && (exchange.discarding || exchange.body.hasDemand) {
            return lastActivity + Clock.nanoseconds(c.bodyTimeout)
        }
        return 0
    }

    func onTimeout() {
        guard !closed else { return }
        let due = deadline.load(ordering: .relaxed)
        guard due != 0, Clock.now() >= due else { return }
        if exchange == nil && headStartedAt != 0 && !lingering && !closeWhenFlushed {
            refuse(HTTPParseError(status: 408, code: "request_timeout",
                                  detail: "The request head did not arrive in time."))
        } else {
            exchange?.body.fail(.timedOut)
            close()
        }
    }

    private func lingerRead() {
        switch inbound.read(from: fd) {
        case .bytes(let n):
            lingered += n
            inbound.consume(inbound.readableCount)
            if lingered > 1 << 20 { close() }
        case .wouldBlock:
            socketReadable = false
        case .endOfFile, .failed:
            close()
        }
    }

    // MARK: writing

    /// Answers a request that never reached a handler, then closes.
    private func refuse(_ error: HTTPParseError) {
        enqueue(ResponseHead.refusal(error, date: date.now())[...])
        if let exchange { exchange.body.fail(.malformed(error)) }
        closeAfterFlush()
    }

    private func closeAfterFlush() {
        closeWhenFlushed = true
        if outboundOffset >= outbound.count { startLinger() } else { updateInterest() }
    }

    /// Half-closes and reads what the client still sends for a moment, so that closing with
    /// unread bytes does not reset the connection before the client has read our answer.
    private func startLinger() {
        guard !closed, !lingering else { return }
        if peerClosed { return close() }
        lingering = true
        _ = shutdown(fd, Int32(SHUT_WR))
        lingerUntil = Clock.now() + Clock.nanoseconds(2)
        inbound.consume(inbound.readableCount)
        updateInterest()
    }

    private func enqueue(_ bytes: ArraySlice<UInt8>) {
        guard !closed, !bytes.isEmpty else { return }
        if outboundOffset >= outbound.count {
            outbound.removeAll(keepingCapacity: true)
            outboundOffset = 0
            switch bytes.withUnsafeBytes({ SystemCall.write(fd, $0) }) {
            case .bytes(let n):
                if n == bytes.count { return }
                outbound.append(contentsOf: bytes.dropFirst(n))
            case .wouldBlock:
                outbound.append(contentsOf: bytes)
            case .endOfFile, .failed:
                return close()
            }
            lastWriteProgress = Clock.now()
            awaitWritable()
        } else {
            outbound.append(contentsOf: bytes)
        }
    }

    private var pendingOutbound: Int { outbound.count - outboundOffset }

    private func awaitWritable() {
        if !writeInterest {
            writeInterest = true
            loop.modify(fd, events: Self.readWriteEvents)
        }
        updateInterest()
    }

    private func onWritable() {
        guard !closed else { return }
        while outboundOffset < outbound.count {
            let start = outboundOffset
            let result = outbound.withUnsafeBytes { raw in
                SystemCall.write(fd, UnsafeRawBufferPointer(rebasing: raw[start...]))
            }
            switch result {
            case .bytes(let n):
                outboundOffset += n
                lastWriteProgress = Clock.now()
            case .wouldBlock:
                resumeDrainWaiters(all: false)
                return updateInterest()
            case .endOfFile, .failed:
                return close()
            }
        }
        outbound.removeAll(keepingCapacity: outbound.capacity <= 256 * 1024)
        outboundOffset = 0
        if writeInterest {
            writeInterest = false
            loop.modify(fd, events: Self.readEvents)
        }
        resumeDrainWaiters(all: true)
        if closeWhenFlushed {
            startLinger()
        } else if exchange == nil && !inbound.isEmpty {
            process()  // pipelined requests held back while the answers drained
        } else {
            updateInterest()
        }
    }

    private func resumeDrainWaiters(all: Bool) {
        guard all || pendingOutbound < context.configuration.responseHighWater, !drainWaiters.isEmpty else { return }
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    // MARK: responses

    /// Runs `work` on the loop's thread: directly when the task already runs there (the usual
    /// case, since handler tasks prefer the loop as executor), else by handing it over.
    private func onLoop(_ work: @escaping @Sendable () -> Void) async {
        if loop.inLoop { return work() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                work()
                continuation.resume()
            }
        }
    }

    private func send(_ response: HTTPResponse, for exchange: Exchange) async {
        let isHead = exchange.head.method == "HEAD"
        switch response.body {
        case .empty, .bytes:
            // A short critical section on the connection's queue, run on this thread when the
            // queue is idle: cheaper than a hop and a wake-up for the common small answer.
            await onLoop {
                var bytes: [UInt8] = []
                if case .bytes(let b) = response.body { bytes = b }
                let framing: ResponseHead.Framing = HTTPStatus.forbidsBody(response.status) ? .none : .length(bytes.count)
                var out = self.startResponse(response, for: exchange, framing: framing,
                                             bodyCapacity: isHead ? 0 : bytes.count)
                if !isHead && framing != .none { out.append(contentsOf: bytes) }
                self.enqueue(out[...])
                self.responseFinished(exchange)
            }
        case .stream(let length, let produce):
            let framing: ResponseHead.Framing
            if HTTPStatus.forbidsBody(response.status) {
                framing = .none
            } else if let length {
                framing = .length(length)
            } else {
                framing = exchange.head.version == .http10 ? .untilClose : .chunked
            }
            await onLoop {
                let head = self.startResponse(response, for: exchange, framing: framing)
                self.enqueue(head[...])
            }
            var completed = true
            if !isHead && framing != .none {
                let counter = Mutex(0)
                let chunked = framing == .chunked
                let declared: Int? = { if case .length(let n) = framing { return n } else { return nil } }()
                let writer = ResponseBodyWriter { bytes in
                    let total = counter.withLock { count -> Int in
                        count += bytes.count
                        return count
                    }
                    // Never send more than Content-Length promised: the surplus would be read as
                    // the start of the next response.
                    if let declared, total > declared { throw ResponseWriteError() }
                    try await self.writeBody(bytes, chunked: chunked)
                }
                do {
                    try await produce(writer)
                    if case .length(let n) = framing, counter.withLock({ $0 }) != n { completed = false }
                } catch {
                    completed = false
                }
            }
            let bodyComplete = completed
            await onLoop {
                if !bodyComplete {
                    // The body cannot be finished honestly: closing tells the client it is short.
                    exchange.closeAfter = true
                } else if framing == .chunked && !isHead {
                    self.enqueue(Self.lastChunk[...])
                }
                if framing == .untilClose { exchange.closeAfter = true }
                self.responseFinished(exchange)
            }
        }
    }

    private static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)
    private static let crlf: [UInt8] = [0x0D, 0x0A]

    private func writeBody(_ bytes: ArraySlice<UInt8>, chunked: Bool) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.execute {
                guard !self.closed else { return continuation.resume(throwing: ResponseWriteError()) }
                if chunked {
                    self.enqueue(Array((String(bytes.count, radix: 16) + "\r\n").utf8)[...])
                    self.enqueue(bytes)
                    self.enqueue(Self.crlf[...])
                } else {
                    self.enqueue(bytes)
                }
                if self.closed {
                    continuation.resume(throwing: ResponseWriteError())
                } else if self.pendingOutbound < self.context.configuration.responseHighWater {
                    continuation.resume()
                } else {
                    self.drainWaiters.append(continuation)
                }
            }
        }
    }

    /// Decides whether the connection survives this exchange and encodes the response head.
    private func startResponse(_ response: HTTPResponse, for exchange: Exchange,
                               framing: ResponseHead.Framing, bodyCapacity: Int = 0) -> [UInt8] {
        exchange.responseStarted = true
        var close = !exchange.head.keepAlive || shuttingDown || peerClosed || exchange.closeAfter
            || response.headers.listElements("connection").contains { $0.equalsIgnoringASCIICase("close") }
        if !exchange.bodyDone {
            // The handler answered before reading the whole body: keep the connection only if
            // the rest is small enough to read and throw away.
            if exchange.head.expectContinue && !exchange.sentContinue {
                close = true
            } else if exchange.head.framing == .chunked {
                close = true  // no telling how much is left
            } else if case .length = exchange.head.framing,
                      (exchange.remainingLength ?? 0) > context.configuration.discardLimit {
                close = true
            }
        }
        if framing == .untilClose { close = true }
        exchange.closeAfter = close
        return ResponseHead.encode(status: response.status, headers: response.headers,
                                   version: exchange.head.version, framing: framing,
                                   close: close, date: date.now(), bodyCapacity: bodyCapacity)
    }

    private func responseFinished(_ exchange: Exchange) {
        guard !closed else { return }
        exchange.responseDone = true
        if exchange.closeAfter {
            if !exchange.bodyDone { exchange.body.fail(.connectionClosed) }
            return closeAfterFlush()
        }
        if !exchange.bodyDone {
            // The handler is done with the body; anything still reading it must not mistake
            // the discarded rest for a short body.
            exchange.body.fail(.connectionClosed)
            exchange.discarding = true
        }
        process()
    }
}

/// The request in flight on a connection and how far its body and response have got.
/// Confined to the connection's queue, like the connection itself.
final class Exchange: @unchecked Sendable {
    let head: HTTPRequestHead
    let body: RequestBody
    var bodyDone: Bool
    var responseStarted = false
    var responseDone = false
    var sentContinue = false
    var closeAfter = false
    var discarding = false
    /// The handler's task, cancelled when the client hangs up before the answer.
    var handlerTask: Task<Void, Never>?
    /// The forwarded client this request is counted for (behind a trusted proxy).
    var countedClient: String?
    var discarded = 0
    private var lengthRemaining: Int
    private var chunked: ChunkedDecoder

    /// `bodyArrived`: the whole body came with the head and is in `body` already.
    init(head: HTTPRequestHead, body: RequestBody, limits: HTTPLimits, bodyArrived: Bool = false) {
        self.head = head
        self.body = body
        self.chunked = ChunkedDecoder(limits: limits)
        switch head.framing {
        case .none:
            bodyDone = true
            lengthRemaining = 0
        case .length where bodyArrived:
            bodyDone = true
            lengthRemaining = 0
        case .length(let n):
            bodyDone = false
            lengthRemaining = n
        case .chunked:
            bodyDone = false
            lengthRemaining = 0
        }
    }

    var remainingLength: Int? {
        if case .length = head.framing { return lengthRemaining }
        return nil
    }

    /// One step of body framing over the buffered bytes.
    func decode(_ inbound: inout InboundBuffer) throws -> ChunkedDecoder.Step {
        switch head.framing {
        case .none:
            return ChunkedDecoder.Step(consumed: 0, data: nil, finished: true)
        case .length:
            let take = min(lengthRemaining, inbound.readableCount)
            lengthRemaining -= take
            return ChunkedDecoder.Step(consumed: take, data: 0..<take, finished: lengthRemaining == 0)
        case .chunked:
            return try inbound.withReadableBytes { bytes in try chunked.decode(bytes) }
        }
    }
}
