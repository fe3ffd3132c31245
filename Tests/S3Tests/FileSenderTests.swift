import Foundation
import Synchronization
import Testing

@testable import S3
@testable import SigV4

#if canImport(Glibc)
    import Glibc
#endif

/// Parts sent by `sendfile` to a store that is a scripted loopback server: the bytes that arrive
/// are the file's range under a signed head, the answer's ETag or error comes back as curl's
/// would, a kept connection is reused (and one the store closed is replaced), and a store that
/// stalls or a task that is cancelled ends the request.
@Suite(.serialized)
struct FileSenderTests {
    /// What the store does with one request.
    enum Reply {
        case answer(String)
        /// Answers, then closes the connection without saying so.
        case answerAndClose(String)
        /// Reads the request and never answers.
        case silence
        /// Answers as soon as the head is in, reads nothing more, and waits for the client to
        /// leave (a refusal S3 sends before the body).
        case refuseBeforeBody(String)
    }

    /// A store on 127.0.0.1 that reads each request (head and Content-Length body) and plays the
    /// next reply of its script; it records what it read and how many connections it took.
    final class ScriptedStore: @unchecked Sendable {
        let port: Int
        private let listener: Int32
        private let state = Mutex<(replies: [Reply], requests: [(head: String, body: [UInt8])], connections: Int)>(([], [], 0))

        init(_ replies: [Reply]) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.listener = listener
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var size = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &size) }
            }
            guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
            port = Int(UInt16(bigEndian: address.sin_port))
            state.withLock { $0.replies = replies }
            Thread.detachNewThread { [self] in acceptLoop() }
        }

        var requests: [(head: String, body: [UInt8])] { state.withLock { $0.requests } }
        var connections: Int { state.withLock { $0.connections } }

        /// Ends the accepting; the accept loop closes the listener itself. Closed here, its
        /// number could be given to another test's listener before the loop's next `accept`,
        /// which would then take (and answer from this script) that test's connections.
        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
        }

        private func acceptLoop() {
            while true {
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else {
                    close(listener)
                    return
                }
                state.withLock { $0.connections += 1 }
                Thread.detachNewThread { [self] in serve(fd) }
            }
        }

        private func serve(_ fd: Int32) {
            defer { close(fd) }
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                var headEnd: Int?
                while headEnd == nil {
                    headEnd = AnswerParser.headEnd(in: buffer, from: 0)
                    if headEnd != nil { break }
                    let n = recv(fd, &chunk, chunk.count, 0)
                    guard n > 0 else { return }
                    buffer += chunk[..<n]
                }
                guard let headEnd else { return }
                let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
                let refusal = state.withLock { state -> String? in
                    guard case .refuseBeforeBody(let text) = state.replies.first else { return nil }
                    state.replies.removeFirst()
                    state.requests.append((head, []))
                    return text
                }
                if let refusal {
                    _ = Array(refusal.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    // POLLRDHUP (0x2000): the client closed its side; nothing is read meanwhile.
                    var poller = pollfd(fd: fd, events: Int16(0x2000), revents: 0)
                    _ = poll(&poller, 1, 20_000)
                    return
                }
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                while buffer.count < headEnd + length {
                    let n = recv(fd, &chunk, chunk.count, 0)
                    guard n > 0 else { return }
                    buffer += chunk[..<n]
                }
                let body = Array(buffer[headEnd..<(headEnd + length)])
                buffer.removeFirst(headEnd + length)
                let reply = state.withLock { state -> Reply in
                    state.requests.append((head, body))
                    return state.replies.isEmpty
                        ? .answer("HTTP/1.1 500 Unscripted\r\nContent-Length: 0\r\n\r\n") : state.replies.removeFirst()
                }
                switch reply {
                case .answer(let text):
                    _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                case .answerAndClose(let text):
                    _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    return
                case .silence, .refuseBeforeBody:
                    // Holds the connection open, reading nothing more, until the client leaves.
                    _ = recv(fd, &chunk, chunk.count, 0)
                    return
                }
            }
        }
    }

    /// A file of `size` bytes counting 0, 7, 14, … (mod 256).
    private func makeFile(size: Int) throws -> (fd: Int32, bytes: [UInt8]) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("file-sender-\(UUID().uuidString)").path
        // A pattern that shows a byte out of place; past 8 MiB (a body only to fill buffers), one value.
        let bytes = size > 8 << 20 ? [UInt8](repeating: 7, count: size) : (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        unlink(path)
        return (fd, bytes)
    }

    private func client(_ port: Int, host: String = "127.0.0.1", _ configure: (inout CurlOptions) -> Void = { _ in }) throws -> S3Client {
        var options = CurlOptions()
        configure(&options)
        let endpoint = try S3Endpoint.parse(
            url: "http://\(host):\(port)", bucket: "b", region: "us-east-1", pathStyle: true, accelerate: false)
        let client = S3Client(
            endpoint: endpoint, credentials: Credentials(accessKeyID: "AKID", secretAccessKey: "secret"), options: options,
            now: { 1_800_000_000 })
        #expect(client.fileSender != nil, "a plain-HTTP endpoint without a proxy sends files directly")
        return client
    }

    private static let ok = "HTTP/1.1 200 OK\r\nETag: \"e1\"\r\nContent-Length: 0\r\n\r\n"

    @Test(arguments: [1, 5 << 20])
    func aPartArrivesWholeUnderItsSignedHeadAndTheConnectionIsKept(size: Int) async throws {
        let store = try ScriptedStore([.answer(Self.ok), .answer("HTTP/1.1 200 OK\r\nETag: e2\r\nContent-Length: 0\r\n\r\n")])
        defer { store.stop() }
        let (fd, bytes) = try makeFile(size: size + 3)
        defer { close(fd) }
        let s3 = try client(store.port)
        let first = try await s3.uploadPart(
            key: "a b/c", uploadId: "u+1", partNumber: 7, body: .file(fd: fd, offset: 3, length: Int64(size)), checksumCRC32C: "AAAAAA==")
        let second = try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 8, body: .file(fd: fd, offset: 0, length: 1))
        #expect(first == "\"e1\"" && second == "\"e2\"")
        let requests = store.requests
        try #require(requests.count == 2)
        #expect(requests[0].head.hasPrefix("PUT /b/a%20b/c?partNumber=7&uploadId=u%2B1 HTTP/1.1\r\nHost: 127.0.0.1:\(store.port)\r\n"))
        for field in [
            "Content-Length: \(size)", "x-amz-checksum-crc32c: AAAAAA==", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
            "Authorization: AWS4-HMAC-SHA256 Credential=AKID/",
        ] {
            #expect(requests[0].head.contains(field), "\(field)")
        }
        #expect(requests[0].body == Array(bytes[3..<(3 + size)]))
        #expect(requests[1].body == [bytes[0]])
        #expect(store.connections == 1, "the second part went on the kept connection")
    }

    /// A store named by host name (a compose service, say): its addresses are looked up, each
    /// tried in turn (`localhost` may name ::1 first, where nothing listens here).
    @Test func aStoreNamedByHostNameIsReached() async throws {
        let store = try ScriptedStore([.answer(Self.ok)])
        defer { store.stop() }
        let (fd, bytes) = try makeFile(size: 100)
        defer { close(fd) }
        let s3 = try client(store.port, host: "localhost")
        let etag = try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 1, body: .file(fd: fd, offset: 0, length: 100))
        #expect(etag == "\"e1\"")
        #expect(store.requests.first?.body == bytes)
        #expect(store.requests.first?.head.contains("Host: localhost:\(store.port)\r\n") == true)
    }

    @Test func anEmptyBodyIsNotHeldBackBehindItsHead() async throws {
        // The head goes with MSG_MORE so it leaves with the body; with no body, it must leave at
        // once, not when the kernel gives up waiting (200 ms, every time). On a loaded machine a
        // PUT may be slow for other reasons: one of up to 20 under 150 ms is enough.
        let store = try ScriptedStore(Array(repeating: .answer(Self.ok), count: 20))
        defer { store.stop() }
        let (fd, _) = try makeFile(size: 0)
        defer { close(fd) }
        let s3 = try client(store.port)
        var fastest = Duration.seconds(60)
        for _ in 1...20 where fastest >= .milliseconds(150) {
            let started = ContinuousClock.now
            _ = try await s3.putObject(key: "empty", body: .file(fd: fd, offset: 0, length: 0))
            fastest = min(fastest, ContinuousClock.now - started)
        }
        #expect(fastest < .milliseconds(150), "fastest empty PUT took \(fastest)")
        #expect(store.requests.allSatisfy { $0.head.contains("Content-Length: 0\r\n") && $0.body.isEmpty })
    }

    @Test func aStoreErrorComesBackWithItsCodeWhateverItsFraming() async throws {
        let xml = "<Error><Code>SlowDown</Code><Message>easy</Message></Error>"
        let chunked =
            "HTTP/1.1 503 Slow Down\r\nTransfer-Encoding: chunked\r\n\r\n\(String(xml.utf8.count, radix: 16))\r\n\(xml)\r\n0\r\n\r\n"
        let store = try ScriptedStore([
            .answer(chunked),
            .answerAndClose("HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n<Error><Code>AccessDenied</Code></Error>"),
        ])
        defer { store.stop() }
        let (fd, _) = try makeFile(size: 1024)
        defer { close(fd) }
        let s3 = try client(store.port)
        await #expect(throws: S3Error(kind: .service, status: 503, code: "SlowDown", message: "easy")) {
            try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 1, body: .file(fd: fd, offset: 0, length: 1024))
        }
        await #expect(throws: S3Error(kind: .service, status: 403, code: "AccessDenied", message: "")) {
            try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 2, body: .file(fd: fd, offset: 0, length: 1024))
        }
    }

    @Test func aRefusalBeforeTheBodyEndsTheSendingAtOnce() async throws {
        // 32 MiB cannot all fit in the sockets' buffers: the sending must notice the answer,
        // not wait for the low-speed rule while the store reads nothing.
        let store = try ScriptedStore([
            .refuseBeforeBody("HTTP/1.1 403 Forbidden\r\nContent-Length: 40\r\n\r\n<Error><Code>AccessDenied</Code></Error>")
        ])
        defer { store.stop() }
        let (fd, _) = try makeFile(size: 32 << 20)
        defer { close(fd) }
        let s3 = try client(store.port)
        let started = ContinuousClock.now
        await #expect(throws: S3Error(kind: .service, status: 403, code: "AccessDenied", message: "")) {
            try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 1, body: .file(fd: fd, offset: 0, length: 32 << 20))
        }
        // The low-speed rule would have taken 30 to 60 s; a loaded machine may take a few.
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(s3.fileSender?.idleCount == 0 && s3.fileSender?.inFlight == 0, "a refused connection is not kept")
    }

    @Test func aHeaderThatCannotBeSentIsRefusedAndLeavesNothingBusy() async throws {
        let store = try ScriptedStore([])
        defer { store.stop() }
        let (fd, _) = try makeFile(size: 16)
        defer { close(fd) }
        let s3 = try client(store.port)
        await #expect(throws: S3Error.self) {
            try await s3.putObject(key: "k", body: .file(fd: fd, offset: 0, length: 16), conditions: [("If-Match", "a\r\nX-Evil: 1")])
        }
        #expect(s3.fileSender?.inFlight == 0 && store.requests.isEmpty)
    }

    @Test func pastItsConnectionsTheSenderLeavesThePartToCurl() async throws {
        let store = try ScriptedStore([.silence, .answer(Self.ok)])
        defer { store.stop() }
        let (fd, _) = try makeFile(size: 1024)
        defer { close(fd) }
        let s3 = try client(store.port) { $0.maxHostConnections = 1 }
        let stuck = Task { try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 1, body: .file(fd: fd, offset: 0, length: 1024)) }
        while store.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        #expect(s3.fileSender?.inFlight == 1)
        let etag = try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 2, body: .file(fd: fd, offset: 0, length: 1024))
        #expect(etag == "\"e1\"" && store.requests.count == 2)
        stuck.cancel()
        _ = try? await stuck.value
        #expect(s3.fileSender?.inFlight == 0)
    }

    @Test func aKeptConnectionTheStoreClosedIsReplaced() async throws {
        // The store answers as if it kept the connection, then closes it: the next part must go
        // on a new connection, not fail. Run many times, since the close races the next send.
        let rounds = 50
        let store = try ScriptedStore(Array(repeating: .answerAndClose(Self.ok), count: rounds))
        defer { store.stop() }
        let (fd, _) = try makeFile(size: 64 * 1024)
        defer { close(fd) }
        let s3 = try client(store.port)
        for part in 1...rounds {
            let etag = try await s3.uploadPart(key: "k", uploadId: "u", partNumber: part, body: .file(fd: fd, offset: 0, length: 64 * 1024))
            #expect(etag == "\"e1\"")
        }
        #expect(store.requests.count == rounds && store.connections == rounds)
    }

    @Test func aStoreThatStallsTimesOutByTheLowSpeedRule() async throws {
        let store = try ScriptedStore([.silence])
        defer { store.stop() }
        let (fd, _) = try makeFile(size: 1024)
        defer { close(fd) }
        let s3 = try client(store.port) {
            $0.lowSpeedSeconds = 1; $0.lowSpeedBytesPerSecond = 1024
        }
        let started = ContinuousClock.now
        await #expect(throws: S3Error.self) {
            do {
                _ = try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 1, body: .file(fd: fd, offset: 0, length: 1024))
            } catch let error as S3Error {
                #expect(error.code == "Timeout" && error.retryable)
                throw error
            }
        }
        let waited = ContinuousClock.now - started
        // One to two windows of a second; the default rule would take 30 to 60 s.
        #expect(waited >= .seconds(1) && waited < .seconds(10), "gave up after \(waited)")
    }

    @Test func aCancelledTaskEndsItsRequestAtOnce() async throws {
        let store = try ScriptedStore([.silence])
        defer { store.stop() }
        let (fd, _) = try makeFile(size: 1024)
        defer { close(fd) }
        let s3 = try client(store.port)
        let task = Task { try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 1, body: .file(fd: fd, offset: 0, length: 1024)) }
        while store.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        let cancelled = ContinuousClock.now
        task.cancel()
        await #expect(throws: S3Error.cancelled) { try await task.value }
        // A tenth of a second on a quiet machine; the store itself would never end it.
        #expect(ContinuousClock.now - cancelled < .seconds(3))
    }

    @Test func aStoreThatIsNotThereFailsToConnect() async throws {
        let store = try ScriptedStore([])
        let port = store.port
        store.stop()
        let (fd, _) = try makeFile(size: 16)
        defer { close(fd) }
        let s3 = try client(port)
        await #expect(throws: S3Error(kind: .transport, status: 0, code: "ConnectFailed", message: "no address of the store answered")) {
            try await s3.uploadPart(key: "k", uploadId: "u", partNumber: 1, body: .file(fd: fd, offset: 0, length: 16))
        }
    }

    @Test func aProxyTLSOrTheSettingKeepsCurl() throws {
        let plain = try S3Endpoint.parse(url: "http://127.0.0.1:9000", bucket: "b", region: "us-east-1", pathStyle: true, accelerate: false)
        let tls = try S3Endpoint.parse(url: "https://127.0.0.1:9000", bucket: "b", region: "us-east-1", pathStyle: true, accelerate: false)
        var off = CurlOptions()
        off.sendFilesDirectly = false
        #expect(FileSender(endpoint: plain, options: CurlOptions(), environment: [:]) != nil)
        #expect(FileSender(endpoint: plain, options: CurlOptions(), environment: ["no_proxy": "*"]) != nil)
        #expect(FileSender(endpoint: tls, options: CurlOptions(), environment: [:]) == nil)
        #expect(FileSender(endpoint: plain, options: off, environment: [:]) == nil)
        for proxy in ["http_proxy", "all_proxy", "ALL_PROXY"] {
            #expect(FileSender(endpoint: plain, options: CurlOptions(), environment: [proxy: "http://proxy:3128"]) == nil, "\(proxy)")
        }
    }
}
