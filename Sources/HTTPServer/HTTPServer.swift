import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on POSIX sockets and Dispatch (RFC 9112).
///
/// Owns the listening socket, the accept loop, the cap on open connections, the sweeper that
/// enforces per-connection deadlines, and graceful shutdown. Everything about a single
/// connection lives in `HTTPConnection`. The server knows nothing of what it serves: every
/// parsed request goes to the `HTTPResponder`.
public final class HTTPServer: Sendable {
    private struct Running: @unchecked Sendable {
        // Dispatch sources are thread-safe objects; the struct is only moved under `state`'s lock.
        var listenFD: Int32
        var acceptSource: DispatchSourceRead
        var sweeper: DispatchSourceTimer
        /// Accepting paused after running out of descriptors (a suspended source must be
        /// resumed before it can be cancelled).
        var acceptSuspended = false
    }

    private let context: ServerContext
    private let loops: [EventLoop]
    private let nextLoop = Atomic<Int>(0)
    private let acceptQueue = DispatchQueue(label: "http.accept")
    private let state = Mutex<Running?>(nil)
    private let draining = Atomic<Bool>(false)

    /// True once a shutdown has reached every connection that was open when it began.
    public var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// `eventLoops` defaults to one per processor.
    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, eventLoops: Int? = nil) throws {
        context = ServerContext(responder: responder, configuration: configuration)
        let count = max(1, eventLoops ?? sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        loops = try (0..<count).map { _ in try EventLoop() }
    }

    public var configuration: HTTPServerConfiguration { context.configuration }

    /// Connections open right now.
    public var openConnections: Int { context.connectionCount }
    /// Body reads made straight into a handler's chunk since the start (tests).
    var directBodyReads: Int { context.directBodyReads.load(ordering: .relaxed) }

    /// Binds, listens and starts accepting. Returns the port bound (useful with port 0).
    @discardableResult
    public func start() throws -> Int {
        let (fd, port) = try Listener.bind(
            host: context.configuration.host, port: context.configuration.port,
            backlog: context.configuration.listenBacklog)
        for loop in loops { loop.start() }
        let acceptSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: acceptQueue)
        acceptSource.setEventHandler { [self] in acceptAll(fd) }
        acceptSource.setCancelHandler { SystemCall.close(fd) }
        let sweeper = DispatchSource.makeTimerSource(queue: acceptQueue)
        sweeper.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250))
        sweeper.setEventHandler { [context] in
            let now = Clock.now()
            for connection in context.connections {
                let due = connection.deadline.load(ordering: .relaxed)
                if due != 0 && due <= now { connection.loop.execute { connection.onTimeout() } }
            }
        }
        state.withLock { $0 = Running(listenFD: fd, acceptSource: acceptSource, sweeper: sweeper) }
        acceptSource.activate()
        sweeper.activate()
        return port
    }

    private func acceptAll(_ listenFD: Int32) {
        for _ in 0..<256 {
            let fd: Int32
            var address: sockaddr_storage
            switch SystemCall.accept(listenFD) {
            case .connection(let accepted, let peer):
                (fd, address) = (accepted, peer)
            case .none:
                return
            case .exhausted:
                // Out of descriptors: stop accepting for a moment instead of spinning.
                state.withLock { running in
                    guard running != nil, running?.acceptSuspended == false else { return }
                    running?.acceptSource.suspend()
                    running?.acceptSuspended = true
                }
                acceptQueue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in
                    state.withLock { running in
                        guard running?.acceptSuspended == true else { return }
                        running?.acceptSource.resume()
                        running?.acceptSuspended = false
                    }
                }
                return
            }
            let loop = loops[nextLoop.add(1, ordering: .relaxed).oldValue % loops.count]
            let connection = HTTPConnection(
                fd: fd, remoteAddress: Listener.describe(&address), peerAddress: Listener.host(&address),
                loop: loop, context: context)
            let refusal: HTTPParseError
            switch context.admit(connection) {
            case .admitted:
                loop.execute { connection.start() }
                continue
            case .serverFull:
                refusal = HTTPParseError(status: 503, code: "too_many_connections", detail: "The server has too many open connections.")
            case .clientFull:
                refusal = HTTPParseError(
                    status: 429, code: "client_connection_limit",
                    detail: "This address has too many open connections.")
            }
            let extra = context.responder.refused(refusal, origin: nil, remoteAddress: Listener.describe(&address))
            _ = ResponseHead.refusal(refusal, date: HTTPDate.format(time(nil)), extra: extra).withUnsafeBytes { SystemCall.write(fd, $0) }
            SystemCall.close(fd)
        }
    }

    /// Stops accepting, lets requests in flight finish for up to `grace` seconds, then closes
    /// whatever is left. Idle connections stay open for `idleWindow` seconds (0: close at once)
    /// and serve at most one more request, answered with `Connection: close`: behind a proxy
    /// that keeps connections alive, a request already on its way is served instead of cut.
    /// Handlers that hold an answer back (long polls) see `HTTPRequest.serverIsShuttingDown`
    /// and can answer at once.
    /// `onDrain` runs once every connection knows (and `serverIsShuttingDown` is true): the
    /// place to wake handlers that wait on something else than the clock.
    public func shutdown(grace: Double, idleWindow: Double = 0, onDrain: @Sendable () -> Void = {}) async {
        let running = state.withLock { s -> Running? in
            defer { s = nil }
            return s
        }
        guard let running else { return }
        running.acceptSource.cancel()
        if running.acceptSuspended { running.acceptSource.resume() }
        // Every open connection learns of the shutdown before we wait: answers written from
        // now on say `Connection: close`.
        let lameDuck = Clock.nanoseconds(min(max(0, idleWindow), grace))
        for connection in context.connections {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                connection.loop.execute {
                    connection.beginShutdown(lameDuck: lameDuck)
                    done.resume()
                }
            }
        }
        draining.store(true, ordering: .releasing)
        // Handlers holding an answer back (long polls) give it now, marked `Connection: close`.
        context.shuttingDown.store(true, ordering: .releasing)
        onDrain()
        let until = Clock.now() + Clock.nanoseconds(grace)
        while context.connectionCount > 0 && Clock.now() < until {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for connection in context.connections {
            connection.loop.execute { connection.close() }
        }
        while context.connectionCount > 0 {
            try? await Task.sleep(for: .milliseconds(5))
        }
        running.sweeper.cancel()
        for loop in loops { loop.stop() }
    }
}
