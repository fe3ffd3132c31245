import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Sends a PUT whose body is a range of an open file (a part waiting on the spool) to a
/// plain-HTTP store with `sendfile(2)`: the kernel hands the page cache's pages to the socket,
/// where curl reads each byte into its buffer and copies it out again (about 0.3 CPU s per GiB
/// of an upload job here, half the S3 client's own CPU, `bench/RESULTS.md`). Only for `http://`
/// endpoints reached without a proxy: TLS and proxies stay with curl. Each request runs on a
/// thread of its own (a part is seconds of I/O; a thread costs microseconds), at most
/// `maxConnections` at once, past which the caller uses curl; idle connections are kept for the
/// next request. Timeouts, the low-speed rule and
/// the error codes are curl's (`CurlOptions`, `ConnectFailed`, `ConnectionReset`, `Timeout`).
final class FileSender: Sendable {
    let hostHeader: String
    let options: CurlOptions
    /// Requests in flight at once, and connections kept idle, at most.
    let maxConnections: Int
    /// Kept connections and when each went idle.
    private let idle = Mutex<[(fd: Int32, since: Double)]>([])
    /// A connection idle longer than this is closed rather than reused (a NAT or balancer may
    /// have dropped it without a word; curl's own limit is 118 s).
    static let idleSeconds = 60.0
    private let busy = Atomic<Int>(0)
    /// The store's addresses, looked up off the sending threads and kept for a minute.
    let addresses: StoreAddresses

    /// nil where curl must send: TLS, a proxy in the environment (curl honours `http_proxy` and
    /// `all_proxy`), or turned off in `options`.
    init?(endpoint: S3Endpoint, options: CurlOptions, environment: [String: String]) {
        guard options.sendFilesDirectly, endpoint.scheme == "http" else { return nil }
        let proxies = ["http_proxy", "all_proxy", "ALL_PROXY"]
        guard proxies.allSatisfy({ (environment[$0] ?? "").isEmpty }) else { return nil }
        hostHeader = endpoint.hostHeader
        self.options = options
        maxConnections = max(1, options.maxHostConnections)
        addresses = StoreAddresses(
            host: endpoint.style == .path ? endpoint.host : "\(endpoint.bucket).\(endpoint.host)", port: endpoint.port ?? 80)
    }

    deinit {
        for connection in idle.withLock({ $0 }) { close(connection.fd) }
    }

    /// Sends `PUT target` with `headers` (already signed; `Host` and `Content-Length` are added
    /// here) and `length` bytes of `fd` from `offset` as the body. nil when curl must send it
    /// instead: every connection busy, no thread to be had, or a file `sendfile` cannot read.
    func perform(
        target: String, headers: [(String, String)], fd: Int32, offset: Int64, length: Int64
    ) async throws -> CurlTransfer.Response? {
        guard busy.wrappingAdd(1, ordering: .relaxed).newValue <= maxConnections else {
            busy.wrappingSubtract(1, ordering: .relaxed)
            return nil
        }
        var head = "PUT \(target) HTTP/1.1\r\nHost: \(hostHeader)\r\n"
        for (name, value) in headers {
            // As curl's transfer refuses them: a CR or LF would add headers.
            guard CurlTransfer.canSend(name: name, value: value) else {
                busy.wrappingSubtract(1, ordering: .relaxed)
                throw S3Error(
                    kind: .protocolViolation, status: 0, code: "InvalidHeader",
                    message: "a header name or value cannot be sent (control or non-ASCII character, or empty)")
            }
            head += "\(name): \(value)\r\n"
        }
        head += "Content-Length: \(length)\r\n\r\n"
        let request = FileExchange.Request(head: Array(head.utf8), fd: fd, offset: offset, length: length)
        let job = Job(sender: self, request: request)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CurlTransfer.Response, any Error>) in
                    job.start(continuation)
                }
            } onCancel: {
                job.cancelled.store(true, ordering: .relaxed)
            }
        } catch let error as S3Error where error == FileExchange.unsupported || error == Self.noThread {
            return nil
        }
    }

    static let noThread = S3Error(kind: .transport, status: 0, code: "NoThread", message: "no thread for the transfer")

    /// An idle connection the store has not closed, if one is kept.
    func takeIdle() -> Int32? {
        let now = FileExchange.seconds()
        while let (fd, since) = idle.withLock({ $0.popLast() }) {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Readable while idle means closed (or bytes nobody asked for): either way, not reusable.
            if now - since < Self.idleSeconds && poll(&poller, 1, 0) == 0 { return fd }
            close(fd)
        }
        return nil
    }

    func giveBack(_ fd: Int32) {
        let now = FileExchange.seconds()
        let kept = idle.withLock { list -> Bool in
            guard list.count < maxConnections else { return false }
            list.append((fd, now))
            return true
        }
        if !kept { close(fd) }
    }

    fileprivate func finished() { busy.wrappingSubtract(1, ordering: .relaxed) }

    /// Requests on their way now, and connections kept idle (for tests and diagnostics).
    var inFlight: Int { busy.load(ordering: .relaxed) }
    var idleCount: Int { idle.withLock { $0.count } }

    /// One request on its own thread, and the task waiting for it.
    private final class Job: @unchecked Sendable {
        // `continuation` is set before the thread starts and resumed once by it.
        let sender: FileSender
        let request: FileExchange.Request
        let cancelled = Atomic<Bool>(false)
        private var continuation: CheckedContinuation<CurlTransfer.Response, any Error>?

        init(sender: FileSender, request: FileExchange.Request) {
            self.sender = sender
            self.request = request
        }

        func start(_ continuation: CheckedContinuation<CurlTransfer.Response, any Error>) {
            self.continuation = continuation
            var thread = pthread_t()
            let box = Unmanaged.passRetained(self).toOpaque()
            let rc = pthread_create(
                &thread, nil,
                { argument in
                    guard let argument else { return nil }
                    Unmanaged<Job>.fromOpaque(argument).takeRetainedValue().run()
                    return nil
                }, box)
            if rc == 0 {
                pthread_detach(thread)
            } else {
                Unmanaged<Job>.fromOpaque(box).release()
                sender.finished()
                self.continuation = nil
                continuation.resume(throwing: FileSender.noThread)
            }
        }

        private func run() {
            // sendfile to a peer that went away raises SIGPIPE in the sending thread: blocked
            // here, it stays pending on this thread and dies with it; the call answers EPIPE.
            var pipe = sigset_t()
            sigemptyset(&pipe)
            sigaddset(&pipe, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipe, nil)
            let exchange = FileExchange(sender: sender, request: request) { self.cancelled.load(ordering: .relaxed) }
            let result = Result { () throws(S3Error) -> CurlTransfer.Response in try exchange.run() }
            sender.finished()
            let continuation = self.continuation
            self.continuation = nil
            continuation?.resume(with: result.mapError { $0 as any Error })
        }
    }
}
