import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One request of `FileSender`, on its thread: a connection (kept or new), the head, the body by
/// `sendfile`, the answer. Sockets are non-blocking and every wait is a `poll` of at most a tenth
/// of a second, so a cancelled task, a stalled store (curl's low-speed rule) and the total
/// timeout are noticed within that. An answer that comes while the body is still going (a
/// refusal) ends the sending, as with curl. A kept connection the store closed before answering
/// gets the request once more on a new one, as curl does.
struct FileExchange {
    struct Request {
        var head: [UInt8]
        var fd: Int32
        var offset: Int64
        var length: Int64
    }

    let sender: FileSender
    let request: Request
    /// Whether the waiting task was cancelled.
    let isCancelled: () -> Bool

    /// `sendfile` cannot read this file (a file system without it): curl sends the request.
    static let unsupported = S3Error(kind: .transport, status: 0, code: "SendfileUnsupported", message: "sendfile cannot read the file")

    /// What the request has moved, for the low-speed rule and the total timeout.
    private struct Pace {
        let started: Double
        var windowStart: Double
        var windowBytes = 0
    }

    func run() throws(S3Error) -> CurlTransfer.Response {
        let now = Self.seconds()
        var pace = Pace(started: now, windowStart: now)
        var retried = false
        while true {
            try checkCancelled()
            let kept = sender.takeIdle()
            let socket: Int32
            if let kept { socket = kept } else { socket = try connect(&pace) }
            var parser = AnswerParser()
            do throws(S3Error) {
                let (response, keepAlive) = try exchange(on: socket, &parser, &pace)
                if keepAlive { sender.giveBack(socket) } else { close(socket) }
                return response
            } catch {
                close(socket)
                if kept != nil, !retried, !parser.hasStarted, error.kind == .transport, error.code == "ConnectionReset" {
                    retried = true
                    continue
                }
                throw error
            }
        }
    }

    private func exchange(
        on socket: Int32, _ parser: inout AnswerParser, _ pace: inout Pace
    ) throws(S3Error) -> (CurlTransfer.Response, Bool) {
        do throws(S3Error) {
            try sendHead(socket, &pace)
            if let early = try sendBody(socket, &parser, &pace) { return (early, false) }
        } catch  where error.code == "ConnectionReset" {
            // The store may have answered before it closed (a refusal of the head, say): that
            // answer is the outcome, not the reset.
            do throws(S3Error) {
                if let (answer, _) = try readAnswer(socket, &parser, &pace) { return (answer, false) }
            } catch  where error.kind == .cancelled {
                throw error
            } catch {}
            throw error
        }
        // Waiting, it returns only a whole answer or throws.
        guard let answer = try readAnswer(socket, &parser, &pace) else { throw AnswerParser.cutShort }
        return answer
    }

    private func sendHead(_ socket: Int32, _ pace: inout Pace) throws(S3Error) {
        var sent = 0
        // MSG_MORE: the head leaves with the body's first bytes, not in a packet of its own (an
        // empty body has none to wait for: the head would sit corked for 200 ms).
        let flags = Int32(MSG_NOSIGNAL) | (request.length > 0 ? Int32(MSG_MORE) : 0)
        while sent < request.head.count {
            try checkCancelled()
            let n = request.head.withUnsafeBytes { raw in send(socket, raw.baseAddress! + sent, raw.count - sent, flags) }
            if n > 0 {
                sent += n
                continue
            }
            if try socketWouldBlock(n) { _ = try wait(socket, Int16(POLLOUT), &pace) }
        }
    }

    /// The body; an answer that arrives before it is all sent ends the sending and is returned.
    private func sendBody(_ socket: Int32, _ parser: inout AnswerParser, _ pace: inout Pace) throws(S3Error) -> CurlTransfer.Response? {
        var position = off_t(request.offset)
        let end = off_t(request.offset + request.length)
        while position < end {
            try checkCancelled()
            let n = sendfile(socket, request.fd, &position, Int(min(end - position, 1 << 30)))
            if n > 0 {
                pace.windowBytes += n
                continue
            }
            if n == 0 {
                throw S3Error(kind: .transport, status: 0, code: "SourceEnded", message: "the file ended before the body did")
            }
            let error = errno
            switch error {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: break
            case EPIPE, ECONNRESET, ENOTCONN, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH:
                throw Self.reset(error)
            case EINVAL, ENOSYS, EOPNOTSUPP:
                throw Self.unsupported
            default:
                throw S3Error(kind: .transport, status: 0, code: "SourceFailed", message: String(cString: strerror(error)))
            }
            // Readable while the body goes: the store answered early (a refusal).
            let ready = try wait(socket, Int16(POLLOUT) | Int16(POLLIN), &pace)
            if ready & Int16(POLLIN) != 0, let (early, _) = try readAnswer(socket, &parser, &pace, waiting: false) {
                return early
            }
        }
        return nil
    }

    /// The answer from the socket. Without `waiting`, only what the socket holds now: nil when
    /// that is not yet the whole answer.
    private func readAnswer(
        _ socket: Int32, _ parser: inout AnswerParser, _ pace: inout Pace, waiting: Bool = true
    ) throws(S3Error) -> (CurlTransfer.Response, Bool)? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            try checkCancelled()
            let n = recv(socket, buffer.baseAddress, buffer.count, 0)
            let step: AnswerParser.Step
            if n > 0 {
                pace.windowBytes += n
                step = try parser.feed(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            } else if n == 0 {
                step = try parser.finish()
            } else {
                if try socketWouldBlock(n) {
                    guard waiting else { return nil }
                    _ = try wait(socket, Int16(POLLIN), &pace)
                }
                continue
            }
            if case .done(let status, let fields, let body, let keepAlive) = step {
                return (CurlTransfer.Response(status: status, headers: fields.map { ($0.name, $0.value) }, body: body), keepAlive)
            }
        }
    }

    /// After a socket call that moved nothing: true when it would block, false to call again
    /// (interrupted); throws when the connection failed.
    private func socketWouldBlock(_ result: Int) throws(S3Error) -> Bool {
        let error = errno
        if result < 0 && error == EINTR { return false }
        guard result < 0, error == EAGAIN || error == EWOULDBLOCK else { throw Self.reset(error) }
        return true
    }

    private static func reset(_ error: Int32) -> S3Error {
        S3Error(kind: .transport, status: 0, code: "ConnectionReset", message: String(cString: strerror(error)))
    }

    private func checkCancelled() throws(S3Error) {
        if isCancelled() { throw S3Error.cancelled }
    }

    /// Waits until `socket` is ready for any of `events`, a tenth of a second at a time,
    /// checking the task's cancellation and the time rules between; returns what it is ready for.
    private func wait(_ socket: Int32, _ events: Int16, _ pace: inout Pace, connectBy: Double? = nil) throws(S3Error) -> Int16 {
        while true {
            try checkCancelled()
            let now = Self.seconds()
            if let connectBy, now >= connectBy {
                throw S3Error(kind: .transport, status: 0, code: "Timeout", message: "no connection to the store in time")
            }
            try check(&pace, now: now)
            var poller = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready > 0 { return poller.revents }
            if ready < 0 && errno != EINTR { throw Self.reset(errno) }
        }
    }

    /// curl's rules: slower than `lowSpeedBytesPerSecond` over `lowSpeedSeconds` (0: no such
    /// rule), or past the total timeout, and the request is abandoned.
    private func check(_ pace: inout Pace, now: Double) throws(S3Error) {
        let options = sender.options
        if let total = options.totalTimeoutMilliseconds, now - pace.started >= Double(total) / 1000 {
            throw S3Error(kind: .transport, status: 0, code: "Timeout", message: "the transfer took longer than its limit")
        }
        guard options.lowSpeedSeconds > 0 else { return }
        let window = Double(options.lowSpeedSeconds)
        if now - pace.windowStart >= window {
            guard Double(pace.windowBytes) >= Double(options.lowSpeedBytesPerSecond) * window else {
                throw S3Error(
                    kind: .transport, status: 0, code: "Timeout",
                    message: "slower than \(options.lowSpeedBytesPerSecond) bytes/s for \(options.lowSpeedSeconds) s")
            }
            pace.windowStart = now
            pace.windowBytes = 0
        }
    }

    /// A new connection: each of the host's addresses in turn, each given an equal share of
    /// what is left of the connect timeout (an address that drops packets does not take it all).
    /// The timeout covers finding the addresses, as curl's does.
    private func connect(_ pace: inout Pace) throws(S3Error) -> Int32 {
        let connectBy = Self.seconds() + Double(sender.options.connectTimeoutMilliseconds) / 1000
        let addresses = try sender.addresses.addresses(by: connectBy, isCancelled: isCancelled)
        var failure = S3Error(kind: .transport, status: 0, code: "ConnectFailed", message: "no address of the store answered")
        // An address that refused or could not be reached (not one whose time ran out first).
        var refused = false
        for (index, address) in addresses.enumerated() {
            let fd = socket(
                address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            var storage = address.storage
            let started = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
            }
            if started == 0 { return fd }
            guard errno == EINPROGRESS else {
                close(fd)
                refused = true
                continue
            }
            let share = (connectBy - Self.seconds()) / Double(addresses.count - index)
            do throws(S3Error) {
                _ = try wait(fd, Int16(POLLOUT), &pace, connectBy: Self.seconds() + max(0, share))
                var error: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
                if error == 0 { return fd }
                close(fd)
                refused = true
            } catch {
                close(fd)
                if error.kind == .cancelled { throw error }
                if error.code != "ConnectFailed" { failure = error }
            }
        }
        if refused { sender.addresses.forget() }
        throw failure
    }

    static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
