import Foundation
import HTTPServer
import Synchronization
import Testing
import TransferEngine

@testable import Adapters
@testable import TransferGateway

/// A source that never ends: 64 KiB at a time, for as long as its reader takes them. It notes
/// when a write fails, that is when the reader's side closed the connection.
private final class EndlessSource: HTTPResponder {
    let closedAt = Mutex<Date?>(nil)
    let written = Atomic<Int>(0)

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        HTTPResponse(
            status: 200,
            body: .stream(length: nil) { writer in
                let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
                do {
                    while true {
                        try await writer.write(chunk)
                        self.written.add(chunk.count, ordering: .relaxed)
                    }
                } catch {
                    self.closedAt.withLock { $0 = $0 ?? Date() }
                    throw error
                }
            })
    }
}

/// The import side of the gateway on real sockets: what a streamed source sees of its reader.
@Suite(.enabled(if: liveTestsEnabled, "set GATEWAY_LIVE_TESTS=1 (scripts/test.sh does)"))
struct SourceFetcherLiveTests {
    /// A job that stops reading a source without ranges (it gave its slot back, failed or was
    /// canceled) drops the body; the source's connection closes at once. It once stayed open,
    /// its transfer paused, for as long as the process lived.
    @Test func aDroppedBodyClosesTheSourcesConnection() async throws {
        var settings = HTTPServerConfiguration()
        settings.host = "127.0.0.1"
        settings.port = 0
        let source = EndlessSource()
        let server = try HTTPServer(configuration: settings, responder: source, eventLoops: 1)
        let port = try server.start()
        let client = try Configuration.fromEnvironment(liveEnvironment).makeS3Client()
        let fetcher = HTTPSourceFetcher(fetcher: client.urlFetcher(allowedHosts: ["127.0.0.1:\(port)"]))
        var body: (any ByteSource)? = try await fetcher.stream("http://127.0.0.1:\(port)/endless", limit: 1 << 40)
        #expect(try await body?.next()?.isEmpty == false)
        // Not read further, the transfer fills its buffer and pauses: the source stops sending.
        var before = -1
        while source.written.load(ordering: .relaxed) != before {
            before = source.written.load(ordering: .relaxed)
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(source.closedAt.withLock { $0 } == nil, "the connection is open while the body is held")
        let dropped = Date()
        body = nil
        let deadline = Date().addingTimeInterval(10)
        while source.closedAt.withLock({ $0 }) == nil && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let closed = try #require(source.closedAt.withLock { $0 }, "the source's connection stayed open")
        #expect(closed.timeIntervalSince(dropped) < 2)
        await server.shutdown(grace: 1)
    }
}
