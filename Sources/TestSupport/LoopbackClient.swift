import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The tests' one raw HTTP/1.1 client on one TCP connection to 127.0.0.1: it sends bytes as
/// given (malformed requests, pieces, pipelines) and tells a complete answer from a refusal, a
/// reset, an early close or a cut body, which URLSession would hide or retry. One thread uses it
/// at a time.
public final class LoopbackClient {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case refused
        /// The connection ended (reset or closed) after `bytes` bytes of the answer.
        case reset(bytes: Int), closed(bytes: Int)
        case timedOut(bytes: Int)
        case malformed(String)

        public var description: String {
            switch self {
            case .refused: "refused"
            case .reset(let n): "reset after \(n) bytes of the answer"
            case .closed(let n): "closed after \(n) bytes of the answer"
            case .timedOut(let n): "timed out after \(n) bytes of the answer"
            case .malformed(let text): "malformed answer: \(text)"
            }
        }

        /// Nothing of an answer arrived.
        public var isUnanswered: Bool { [.reset(bytes: 0), .closed(bytes: 0), .refused].contains(self) }
    }

    /// A status line and its headers (names lower-cased).
    public struct Head {
        public let status: Int
        public let headers: [String: String]
        public var closes: Bool { headers["connection"]?.lowercased() == "close" }
        public var length: Int? { headers["content-length"].flatMap(Int.init) }
    }

    /// A whole answer, headers in the order they came.
    public struct Response {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public let fd: Int32
    public let localPort: Int
    private var buffer: [UInt8] = []
    /// Bytes of the current answer received so far (head and body).
    private var received = 0

    /// `receiveBuffer` shrinks SO_RCVBUF before connecting, so a large answer stays mostly unsent.
    public init(port: Int, receiveBuffer: Int32? = nil) throws(Failure) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            let code = errno
            Glibc.close(fd)
            throw code == ECONNREFUSED ? .refused : .reset(bytes: 0)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        localPort = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { Glibc.close(fd) }

    /// Sends every byte; a peer that went away is a failure of the answer not yet read.
    public func send(_ bytes: some Collection<UInt8>) throws(Failure) {
        received = 0
        let bytes = Array(bytes)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw errno == ECONNRESET ? .reset(bytes: 0) : .closed(bytes: 0) }
            offset += n
        }
    }

    public func send(_ text: String) throws(Failure) { try send(Array(text.utf8)) }

    /// Half-closes: the server reads an end of file after what was sent.
    public func shutdownWrite() { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// One more read into the buffer.
    private func fill(_ deadline: Date) throws(Failure) {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let wait = Int32(max(0, deadline.timeIntervalSinceNow) * 1000) + 1
        if poll(&pfd, 1, wait) == 0 { throw .timedOut(bytes: received) }
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw errno == ECONNRESET ? .reset(bytes: received) : .closed(bytes: received) }
        if n == 0 { throw .closed(bytes: received) }
        buffer.append(contentsOf: chunk[0..<n])
        received += n
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        for i in 0...(buffer.count - needle.count) where buffer[i] == needle[0] && buffer[i..<(i + needle.count)].elementsEqual(needle) {
            return i
        }
        return nil
    }

    // MARK: answers

    /// The status line and headers of the next answer.
    public func readHead(deadline: Date) throws(Failure) -> Head {
        let (status, fields) = try readHeadFields(deadline: deadline)
        var headers: [String: String] = [:]
        for (name, value) in fields { headers[name.lowercased()] = value }
        return Head(status: status, headers: headers)
    }

    private func readHeadFields(deadline: Date) throws(Failure) -> (Int, [(String, String)]) {
        var end = find([13, 10, 13, 10])
        while end == nil {
            try fill(deadline)
            end = find([13, 10, 13, 10])
        }
        let stop = end ?? 0
        let lines = String(decoding: buffer[0..<stop], as: UTF8.self).components(separatedBy: "\r\n")
        buffer.removeFirst(stop + 4)
        let statusLine = lines[0].split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw .malformed(lines[0])
        }
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed(line) }
            fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return (status, fields)
    }

    /// Up to `count` more body bytes (fewer only when the buffer already holds some).
    public func readBody(upTo count: Int, deadline: Date) throws(Failure) -> [UInt8] {
        if buffer.isEmpty { try fill(deadline) }
        let take = min(count, buffer.count)
        defer { buffer.removeFirst(take) }
        return Array(buffer[0..<take])
    }

    /// A whole answer framed by Content-Length (the gateway frames its JSON so; 204 and 304 have no body).
    public func readResponse(deadline: Date) throws(Failure) -> (head: Head, body: [UInt8]) {
        let head = try readHead(deadline: deadline)
        var body: [UInt8] = []
        if head.status == 304 || head.status == 204 { return (head, body) }
        guard let length = head.length else { throw .malformed("no Content-Length") }
        while body.count < length { body += try readBody(upTo: length - body.count, deadline: deadline) }
        return (head, body)
    }

    /// One answer: status line, headers, and a body framed by Content-Length or chunked, or
    /// until the close (none for HEAD, 1xx, 204, 304).
    public func readResponse(timeout: Double = 5, head: Bool = false) throws(Failure) -> Response {
        let deadline = Date().addingTimeInterval(timeout)
        let (status, headers) = try readHeadFields(deadline: deadline)
        var response = Response(status: status, headers: headers, body: [])
        if head || status < 200 || status == 204 || status == 304 { return response }
        if let length = response.header("content-length").flatMap(Int.init) {
            while buffer.count < length { try fill(deadline) }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else if response.header("transfer-encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine(deadline: deadline)
                guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else { throw .malformed("bad chunk") }
                if size == 0 {
                    while try readLine(deadline: deadline) != "" {}
                    break
                }
                while buffer.count < size + 2 { try fill(deadline) }
                response.body.append(contentsOf: buffer[0..<size])
                buffer.removeFirst(size + 2)
            }
        } else {
            response.body = try readToEnd(timeout: deadline.timeIntervalSinceNow)
        }
        return response
    }

    /// The next line (without its CRLF).
    public func readLine(timeout: Double = 5) throws(Failure) -> String {
        try readLine(deadline: Date().addingTimeInterval(timeout))
    }

    private func readLine(deadline: Date) throws(Failure) -> String {
        while true {
            if let end = find([13, 10]) {
                let line = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return line
            }
            try fill(deadline)
        }
    }

    /// Everything until the server closes.
    public func readToEnd(timeout: Double = 5) throws(Failure) -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                try fill(deadline)
            } catch .closed, .reset {
                break
            }
        }
        defer { buffer.removeAll() }
        return buffer
    }

    /// True when the server closes (end of file or reset) within `timeout` seconds.
    public func closedByPeer(within timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                try fill(deadline)
            } catch .timedOut {
                return false
            } catch {
                return true
            }
        }
    }
}
