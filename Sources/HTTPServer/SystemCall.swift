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
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .bytes(0) }
        while true {
            let n = Glibc.read(fd, base, buffer.count)
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
