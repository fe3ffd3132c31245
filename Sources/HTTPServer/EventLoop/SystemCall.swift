#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The outcome of one non-blocking read or write.
enum IOResult: Equatable {
    case bytes(Int)
    case wouldBlock
    case endOfFile
    case failed(Int32)
}

/// Every system call the server makes goes through here: `EINTR` is retried, would-block is
/// an ordinary answer, and errors come back as values.
enum SystemCall {
    /// `recv` on a socket (not `read`: that goes through the file layer's position lock first).
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .bytes(0) }
        while true {
            let n = Glibc.recv(fd, base, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfFile }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(errno)
            }
        }
    }

    /// `send` with `MSG_NOSIGNAL`, so a peer that went away is an error, never a SIGPIPE.
    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> IOResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .bytes(0) }
        while true {
            let n = Glibc.send(fd, base, buffer.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .bytes(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(errno)
            }
        }
    }

    /// What one `accept` gave.
    enum Accepted {
        case connection(Int32, sockaddr_storage)
        /// Nothing to accept now (or the listener is gone).
        case none
        /// Out of descriptors or memory: stop accepting for a moment instead of spinning.
        case exhausted
    }

    /// `accept`, retrying `EINTR` and a connection aborted before it was taken; the new socket is
    /// made non-blocking, close-on-exec and `TCP_NODELAY`.
    static func accept(_ listenFD: Int32) -> Accepted {
        while true {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listenFD, $0, &length) }
            }
            if fd >= 0 {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
                return .connection(fd, address)
            }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .exhausted
            default: return .none
            }
        }
    }

    /// Half-closes: no more bytes go out, the peer reads an end of file after what was sent.
    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Whether the peer's bytes wait unread in the socket (a one-byte `MSG_PEEK`, never blocking).
    static func hasBytesWaiting(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        while true {
            let n = Glibc.recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            if n < 0 && errno == EINTR { continue }
            return n > 0
        }
    }

    /// Adds one to an eventfd (wakes its reader), retrying `EINTR`.
    static func signal(eventFD: Int32) {
        var one: UInt64 = 1
        while Glibc.write(eventFD, &one, 8) < 0 && errno == EINTR {}
    }

    /// Empties an eventfd, retrying `EINTR`.
    static func drain(eventFD: Int32) {
        var value: UInt64 = 0
        while Glibc.read(eventFD, &value, 8) < 0 && errno == EINTR {}
    }

    static func close(_ fd: Int32) {
        // close() is not retried on EINTR: on Linux the descriptor is released either way.
        _ = Glibc.close(fd)
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
