import Foundation
import Testing

@testable import TransferGatewayClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `requestTimeout` is a wait for the next byte, not a bound on the whole request, on Linux's
/// FoundationNetworking as on Apple's URLSession: a part whose body keeps crossing a slow link
/// may take many times the timeout, and a peer that takes a request and goes silent fails with
/// `URLError(.timedOut)`, a transient error the engine retries.
@Suite(.serialized) struct RequestTimeoutTests {
    @Test func aBodyThatKeepsMovingOutlivesTheTimeout() async throws {
        let body = Data(repeating: 7, count: 12 << 20)
        // 256 KiB every 100 ms: some 5 s for the whole body, more than twice the idle timeout
        // (2 s: libcurl may wait a second for a `100 Continue` this server never sends).
        let server = try LoopbackServer(readChunk: 256 << 10, pause: 0.1, answer: true)
        let transport = HTTPTransport(configuration: Self.session(timeout: 2))
        defer { transport.close() }
        let started = ProcessInfo.processInfo.systemUptime
        var request = URLRequest(url: server.url, timeoutInterval: 2)
        request.httpMethod = "PUT"
        let answer = try await transport.send(request, body: body)
        let took = ProcessInfo.processInfo.systemUptime - started
        #expect(answer.status == 200)
        #expect(server.bytesRead() >= body.count)
        #expect(took > 3, "the server read the body slowly; it took \(took) s")
    }

    @Test func aSilentPeerTimesOutAfterTheTimeout() async throws {
        let server = try LoopbackServer(readChunk: 0, pause: 0, answer: false)
        let transport = HTTPTransport(configuration: Self.session(timeout: 1))
        defer { transport.close() }
        let started = ProcessInfo.processInfo.systemUptime
        var request = URLRequest(url: server.url, timeoutInterval: 1)
        request.httpMethod = "GET"
        await #expect {
            _ = try await transport.send(request)
        } throws: { error in
            (error as? URLError)?.code == .timedOut && GatewayAPI.isTransient(error)
        }
        let took = ProcessInfo.processInfo.systemUptime - started
        #expect(took >= 1 && took < 10, "timed out after \(took) s")
    }

    /// The client's own session settings with `timeout` as its request timeout.
    private static func session(timeout: TimeInterval) -> URLSessionConfiguration {
        let session = URLSessionConfiguration.ephemeral
        session.timeoutIntervalForRequest = timeout
        return session
    }
}

/// One connection at a time on 127.0.0.1: reads `readChunk` bytes per `pause` seconds until the
/// request's `Content-Length` is in (or, with `readChunk` 0, reads nothing and never answers),
/// then answers 200 when `answer` is set.
private final class LoopbackServer: @unchecked Sendable {
    let url: URL
    private let listener: Int32
    private let lock = NSLock()
    private var read = 0

    init(readChunk: Int, pause: TimeInterval, answer: Bool) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 4) == 0 else { throw URLError(.cannotConnectToHost) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/part")!
        Thread.detachNewThread { [self] in
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            guard readChunk > 0 else {
                Thread.sleep(forTimeInterval: 15)
                return
            }
            var buffer = [UInt8](repeating: 0, count: readChunk)
            var head = Data()
            var expected: Int?
            var bodyRead = 0
            while expected.map({ bodyRead < $0 }) ?? true {
                let count = recv(connection, &buffer, readChunk, 0)
                guard count > 0 else { return }
                if let _ = expected {
                    bodyRead += count
                } else {
                    head.append(contentsOf: buffer[0..<count])
                    if let end = head.range(of: Data("\r\n\r\n".utf8)) {
                        let text = String(decoding: head[..<end.lowerBound], as: UTF8.self).lowercased()
                        let line = text.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                        expected = line.flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                        bodyRead = head.count - end.upperBound
                    }
                }
                lock.withLock { read = bodyRead }
                Thread.sleep(forTimeInterval: pause)
            }
            if answer {
                let reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                _ = reply.withCString { send(connection, $0, strlen($0), 0) }
            }
        }
    }

    /// Body bytes read so far.
    func bytesRead() -> Int { lock.withLock { read } }

    deinit { close(listener) }
}
