#if canImport(Glibc)
    import Glibc
#endif

/// Opening the listening socket and naming peers.
enum Listener {
    struct BindError: Error, CustomStringConvertible {
        let description: String
    }

    /// Resolves `host` (a name or a numeric address), binds the first address that works with
    /// `SO_REUSEADDR`, and listens. Returns the descriptor and the port actually bound.
    static func bind(host: String, port: Int, backlog: Int32) throws -> (Int32, Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw BindError(description: "cannot resolve listen address \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: Int32 = 0
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let fd = socket(
                info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { lastError = errno; continue }
            SystemCall.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            if Glibc.bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 || listen(fd, backlog) != 0 {
                lastError = errno
                SystemCall.close(fd)
                continue
            }
            var bound = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            return (fd, portNumber(of: &bound))
        }
        throw BindError(description: "cannot listen on \(host):\(port): \(SystemCall.errorText(lastError))")
    }

    static func portNumber(of address: inout sockaddr_storage) -> Int {
        withUnsafePointer(to: &address) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            default:
                return 0
            }
        }
    }

    /// The numeric address alone (`192.0.2.7`, `2001:db8::1`), for per-client counting.
    static func host(_ address: inout sockaddr_storage) -> String {
        let described = describe(&address)
        if described.hasPrefix("["), let end = described.lastIndex(of: "]") {
            return String(described[described.index(after: described.startIndex)..<end])
        }
        return described.split(separator: ":").first.map(String.init) ?? described
    }

    /// `address:port`, or `[v6]:port`.
    static func describe(_ address: inout sockaddr_storage) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let port = portNumber(of: &address)
        return withUnsafePointer(to: &address) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
                    return "\(cText(text)):\(port)"
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var addr = sin6.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
                    return "[\(cText(text))]:\(port)"
                }
            default:
                return "unknown"
            }
        }
    }

    private static func cText(_ chars: [CChar]) -> String {
        String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
