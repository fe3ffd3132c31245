import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP client for live tests: raw bytes out, raw bytes in, with deadlines.
final class TestClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
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
            throw Failure(description: "connect failed: \(code)")
        }
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw Failure(description: "send failed: \(errno)") }
            offset += n
        }
    }

    /// Reads more bytes into the buffer; false on EOF or error; throws on timeout.
    @discardableResult
    private func fill(deadline: Date) throws -> Bool {
        let remaining = deadline.timeIntervalSinceNow
        if remaining <= 0 { throw Failure(description: "timed out") }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, Int32(remaining * 1000) + 1)
        if ready == 0 { throw Failure(description: "timed out") }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, 0) }
        if n <= 0 { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// True when the server closes (EOF or reset) within `timeout` seconds, with nothing unread left.
    func closedByPeer(within timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                if try !fill(deadline: deadline) { return true }
            } catch {
                return false
            }
        }
    }

    /// Everything until the server closes.
    func readToEnd(timeout: Double = 5) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while try fill(deadline: deadline) {}
        defer { buffer.removeAll() }
        return buffer
    }

    /// Reads exactly the bytes of `text`'s length and returns them as text.
    func readLine(timeout: Double = 5) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let end = find([13, 10], from: 0) {
                let line = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return line
            }
            guard try fill(deadline: deadline) else { throw Failure(description: "closed") }
        }
    }

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        guard buffer.count >= needle.count + start else { return nil }
        for i in start...(buffer.count - needle.count) where buffer[i] == needle[0] {
            if Array(buffer[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }

    /// One response: status line, headers, and a body framed by Content-Length or chunked
    /// (or none for HEAD, 1xx, 204, 304).
    func readResponse(timeout: Double = 5, head: Bool = false) throws -> Response {
        let deadline = Date().addingTimeInterval(timeout)
        var headEnd: Int?
        while headEnd == nil {
            headEnd = find([13, 10, 13, 10], from: 0)
            if headEnd == nil { guard try fill(deadline: deadline) else { throw Failure(description: "closed before a response") } }
        }
        let headText = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        buffer.removeFirst(headEnd! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(description: "bad status line") }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = Response(status: status, headers: headers, body: [])
        if head || status < 200 || status == 204 || status == 304 { return response }
        if let length = response.header("content-length").flatMap(Int.init) {
            while buffer.count < length { guard try fill(deadline: deadline) else { throw Failure(description: "short body") } }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else if response.header("transfer-encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine(timeout: deadline.timeIntervalSinceNow)
                guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else { throw Failure(description: "bad chunk") }
                if size == 0 {
                    while try readLine(timeout: deadline.timeIntervalSinceNow) != "" {}
                    break
                }
                while buffer.count < size + 2 { guard try fill(deadline: deadline) else { throw Failure(description: "short chunk") } }
                response.body.append(contentsOf: buffer[0..<size])
                buffer.removeFirst(size + 2)
            }
        } else {
            response.body = try readToEnd(timeout: deadline.timeIntervalSinceNow)
        }
        return response
    }
}

/// This process's open TCP sockets (not listeners) with `port` at either end: the server's
/// accepted connections and the test's clients. Other suites running in the same process open
/// descriptors of their own (files, pooled S3 connections), so a leak check counts only these.
func openSocketsOnPort(_ port: Int) -> Int {
    var inodes = Set<String>()
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
           target.hasPrefix("socket:[") {
            inodes.insert(String(target.dropFirst(8).dropLast()))
        }
    }
    let hexPort = String(format: "%04X", port)
    var count = 0
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        // Read to the end: String(contentsOfFile:) stops after the first page of a /proc file,
        // which would hide sockets past the first few dozen.
        guard let data = try? FileHandle(forReadingFrom: URL(fileURLWithPath: table)).readToEnd() else { continue }
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] != "0A", inodes.contains(String(fields[9])) else { continue }
            if fields[1].hasSuffix(":" + hexPort) || fields[2].hasSuffix(":" + hexPort) { count += 1 }
        }
    }
    return count
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
