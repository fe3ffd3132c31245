@testable import TransferGateway
@testable import Adapters
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking HTTP/1.1 client on one kept-alive TCP connection, for the shutdown test: it sends
/// a request in pieces and tells a complete answer from a refusal, a reset, an early close or a
/// cut body (URLSession would retry some of these silently). One thread uses it at a time.
final class RawHTTPConnection {
    enum Failure: Error, Equatable, CustomStringConvertible {
        case refused
        /// The connection ended (reset or closed) after `bytes` bytes of the answer.
        case reset(bytes: Int), closed(bytes: Int)
        case timedOut(bytes: Int)
        case malformed(String)

        var description: String {
            switch self {
            case .refused: "refused"
            case .reset(let n): "reset after \(n) bytes of the answer"
            case .closed(let n): "closed after \(n) bytes of the answer"
            case .timedOut(let n): "timed out after \(n) bytes of the answer"
            case .malformed(let text): "malformed answer: \(text)"
            }
        }

        /// Nothing of an answer arrived.
        var isUnanswered: Bool { [.reset(bytes: 0), .closed(bytes: 0), .refused].contains(self) }
    }

    struct Head {
        let status: Int
        let headers: [String: String]
        var closes: Bool { headers["connection"]?.lowercased() == "close" }
        var length: Int? { headers["content-length"].flatMap(Int.init) }
    }

    let fd: Int32
    let localPort: Int
    private var buffer: [UInt8] = []
    /// Bytes of the current answer received so far (head and body).
    private var received = 0

    /// `receiveBuffer` shrinks SO_RCVBUF before connecting, so a large answer stays mostly unsent.
    init(port: Int, receiveBuffer: Int32? = nil) throws(Failure) {
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
    func send(_ bytes: some Collection<UInt8>) throws(Failure) {
        received = 0
        let bytes = Array(bytes)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw errno == ECONNRESET ? .reset(bytes: 0) : .closed(bytes: 0) }
            offset += n
        }
    }

    func send(_ text: String) throws(Failure) { try send(Array(text.utf8)) }

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

    /// The status line and headers of the next answer.
    func readHead(deadline: Date) throws(Failure) -> Head {
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while end == nil {
            end = buffer.count < 4 ? nil : (0...(buffer.count - 4)).first { buffer[$0..<($0 + 4)].elementsEqual(separator) }
            if end == nil { try fill(deadline) }
        }
        let lines = String(decoding: buffer[0..<end!], as: UTF8.self).components(separatedBy: "\r\n")
        buffer.removeFirst(end! + 4)
        let status = lines[0].split(separator: " ")
        guard status.count >= 2, status[0] == "HTTP/1.1", let code = Int(status[1]) else { throw .malformed(lines[0]) }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed(line) }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Head(status: code, headers: headers)
    }

    /// Up to `count` more body bytes (fewer only when the buffer already holds some).
    func readBody(upTo count: Int, deadline: Date) throws(Failure) -> [UInt8] {
        if buffer.isEmpty { try fill(deadline) }
        let take = min(count, buffer.count)
        defer { buffer.removeFirst(take) }
        return Array(buffer[0..<take])
    }

    /// A whole answer framed by Content-Length (the gateway frames its JSON so; 304 has no body).
    func readResponse(deadline: Date) throws(Failure) -> (head: Head, body: [UInt8]) {
        let head = try readHead(deadline: deadline)
        var body: [UInt8] = []
        if head.status == 304 || head.status == 204 { return (head, body) }
        guard let length = head.length else { throw .malformed("no Content-Length") }
        while body.count < length { body += try readBody(upTo: length - body.count, deadline: deadline) }
        return (head, body)
    }
}

/// Bytes the kernel still holds unread by the process at `serverPort` on the connection from
/// `clientPort` (/proc/net/tcp `rx_queue`): 0 means the server has read every byte sent to it.
func unreadByServer(serverPort: Int, clientPort: Int) -> Int? {
    // Read to the end: String(contentsOfFile:) stops after the first page of a /proc file.
    guard let data = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/net/tcp")).readToEnd() else { return nil }
    let text = String(decoding: data, as: UTF8.self)
    let local = String(format: ":%04X", serverPort), remote = String(format: ":%04X", clientPort)
    for line in text.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        guard fields.count > 4, fields[1].hasSuffix(local), fields[2].hasSuffix(remote) else { continue }
        return Int(fields[4].split(separator: ":")[1], radix: 16)
    }
    return nil
}
