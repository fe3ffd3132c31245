import CSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One client connection: the shell around `ConnectionState`. It reads the socket and parses
/// requests, hands each to the responder in order, feeds bodies to their handlers and writes
/// answers, with backpressure both ways; what to do next (read or not, parse or not, keep the
/// connection, close, linger) and when (deadlines) is the state machine's decision.
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
    let context: ServerContext
    /// Uptime nanoseconds at which `onTimeout` should run; 0 for none.
    let deadline = Atomic<UInt64>(0)

    var state: ConnectionState
    /// The kernel may hold unread bytes (edge-triggered: cleared by a would-block read, or by a
    /// read that left room in its buffer, as that one emptied the kernel's queue).
    var socketReadable = true
    /// The peer's shutdown was reported (`EPOLLRDHUP`): its edge may have come with bytes a
    /// short read takes, so from then on only a read that finds end of file or would block
    /// says the kernel has nothing more.
    var peerShutSeen = false
    var inReadLoop = false
    var readScheduled = false
    /// A request was answered at once since the last read: the next read waits its turn behind
    /// the loop's other connections (the client's next request may already be here).
    var answeredAtOnce = false
    var writeInterest = false
    var inbound = InboundBuffer()
    var parser: HTTPHeadParser
    var exchange: Exchange?
    var outbound: [UInt8] = []
    var outboundOffset = 0
    var drainWaiters: [CheckedContinuation<Void, any Error>] = []
    /// Bytes read and dropped while lingering.
    var lingered = 0
    var date = HTTPDate()

    static let readEvents = TG_EPOLLIN | TG_EPOLLRDHUP | TG_EPOLLET
    static let readWriteEvents = readEvents | TG_EPOLLOUT

    init(fd: Int32, remoteAddress: String, peerAddress: String, loop: EventLoop, context: ServerContext) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.peerAddress = peerAddress
        self.peerIsProxy = context.configuration.trustedProxies.contains(address: peerAddress)
        self.loop = loop
        self.context = context
        self.parser = HTTPHeadParser(limits: context.configuration.limits)
        self.state = ConnectionState(limits: ConnectionState.Limits(context.configuration), now: Clock.now())
    }

    var closed: Bool { state.isClosed }
    var pendingOutbound: Int { outbound.count - outboundOffset }

    // MARK: lifecycle

    func start() {
        guard !closed else { return }
        loop.register(fd, events: Self.readEvents, handler: self)
        onReadable()
    }

    func onEvent(_ events: UInt32) {
        let failed = events & (TG_EPOLLERR | TG_EPOLLHUP) != 0
        if failed || events & TG_EPOLLRDHUP != 0 {
            peerShutSeen = true
            peerHungUp()
        }
        if events & (TG_EPOLLIN | TG_EPOLLRDHUP) != 0 || failed {
            socketReadable = true
            onReadable()
        }
        if (events & TG_EPOLLOUT != 0 || failed) && !closed && pendingOutbound > 0 {
            onWritable()
        }
    }

    /// Stops after the request in flight; an idle connection closes once `lameDuck` nanoseconds
    /// pass without a request, or after answering the one that comes.
    func beginShutdown(lameDuck: UInt64) {
        let action = state.shutdown(
            exchangeInFlight: exchange != nil, pendingOutbound: pendingOutbound, now: Clock.now(), lameDuck: lameDuck)
        if action == .none { updateInterest() } else { perform(action) }
    }

    func close() {
        guard !closed else { return }
        state.closed()
        deadline.store(0, ordering: .relaxed)
        if let exchange {
            exchange.body.fail(.connectionClosed)
            if !exchange.state.responseDone { exchange.handlerTask?.cancel() }
            if let counted = exchange.countedClient {
                exchange.countedClient = nil
                context.give(counted)
            }
        }
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter.resume(throwing: ResponseWriteError()) }
        loop.deregister(fd)
        SystemCall.close(fd)
        context.connectionClosed(self)
    }

    /// Carries out a decision of the state machine.
    func perform(_ action: ConnectionState.Action) {
        switch action {
        case .none: break
        case .close: close()
        case .refuse(let error): refuse(error)
        case .linger: startLinger()
        }
    }

    /// Closes once what is queued is written (lingering first).
    func closeAfterFlush() {
        let action = state.closeWhenFlushed(pendingOutbound: pendingOutbound)
        if action == .none { updateInterest() } else { perform(action) }
    }

    /// Half-closes and reads what the client still sends for a moment, so that closing with
    /// unread bytes does not reset the connection before the client has read our answer.
    private func startLinger() {
        guard !closed, !state.isLingering else { return }
        if state.beginLinger(now: Clock.now()) == .close { return close() }
        SystemCall.shutdownWrite(fd)
        inbound.consume(inbound.readableCount)
        updateInterest()
    }

    /// Answers a request that never reached a handler, then closes.
    func refuse(_ error: HTTPParseError) {
        let origin = inbound.withReadableBytes { Self.originHeader(in: $0) }
        let extra = context.responder.refused(error, origin: origin, remoteAddress: remoteAddress)
        enqueue(ResponseHead.refusal(error, date: date.now(), extra: extra)[...])
        if let exchange { exchange.body.fail(.malformed(error)) }
        closeAfterFlush()
    }

    /// The `Origin` of a head the parser refused, found in its first 16 KiB, if it names one a
    /// header may carry: the refusal can then carry CORS headers a browser reads.
    static func originHeader(in bytes: UnsafeRawBufferPointer) -> String? {
        let window = bytes.prefix(16 * 1024)
        let needle = Array("\r\norigin:".utf8)
        guard window.count > needle.count else { return nil }
        var i = 0
        while i + needle.count <= window.count {
            var matches = true
            for j in 0..<needle.count {
                var byte = window[i + j]
                if byte >= 0x41 && byte <= 0x5A { byte |= 0x20 }
                if byte != needle[j] { matches = false; break }
            }
            if matches {
                var value: [UInt8] = []
                var k = i + needle.count
                while k < window.count, window[k] != 0x0D, window[k] != 0x0A, value.count <= 256 {
                    value.append(window[k])
                    k += 1
                }
                let trimmed = value.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
                guard !trimmed.isEmpty, trimmed.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
                return String(decoding: Array(trimmed), as: UTF8.self)
            }
            i += 1
        }
        return nil
    }

    // MARK: interest and deadlines

    func wantsRead() -> Bool {
        state.wantsRead(
            exchange: exchange?.state, bodyWantsData: exchange.map { $0.body.wantsData } ?? false,
            pendingOutbound: pendingOutbound, buffered: inbound.readableCount)
    }

    /// Reads again if bytes are wanted and may be waiting, and moves the deadline. With
    /// edge-triggered events nothing else would notice bytes that arrived while we did not want
    /// them; when we did not want them we simply left them in the kernel (backpressure).
    func updateInterest() {
        guard !closed else { return }
        let want = wantsRead()
        if want && socketReadable && !inReadLoop { scheduleRead() }
        deadline.store(
            state.deadline(
                reading: want, pendingOutbound: pendingOutbound, exchange: exchange?.state,
                bodyHasDemand: exchange?.body.hasDemand ?? false), ordering: .relaxed)
    }

    func onTimeout() {
        guard !closed else { return }
        let due = deadline.load(ordering: .relaxed)
        guard due != 0, Clock.now() >= due else { return }
        if exchange == nil, pendingOutbound == 0, state.awaitsRequest, SystemCall.hasBytesWaiting(fd) {
            state.headIncomplete(now: Clock.now())
            socketReadable = true
            return updateInterest()
        }
        let action = state.timedOut(exchangeInFlight: exchange != nil)
        if action == .close { exchange?.body.fail(.timedOut) }
        perform(action)
    }
}
