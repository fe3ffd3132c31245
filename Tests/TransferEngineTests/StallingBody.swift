import Synchronization
import TestSupport
import TransferEngine

/// Bytes handed out in chunks (a request body, a source's stream) that count what they have
/// handed out and, given `stallAt`, stop there (a client or a source gone quiet) until released.
final class StallingBody: ByteSource {
    private let source: ChunkedBytes
    private let stallAt: Int?
    private let gate = AsyncStream<Void>.makeStream()
    /// Bytes handed out so far.
    let handedOut = Atomic<Int>(0)

    init(_ bytes: [UInt8], chunk: Int = 64 * 1024, stallAt: Int? = nil) {
        source = ChunkedBytes(bytes: bytes, chunk: chunk)
        self.stallAt = stallAt
    }

    func next() async throws -> ArraySlice<UInt8>? {
        if let stallAt, handedOut.load(ordering: .relaxed) == stallAt {
            for await _ in gate.stream {}
        }
        let chunk = try await source.next()
        handedOut.add(chunk?.count ?? 0, ordering: .relaxed)
        return chunk
    }

    func release() { gate.continuation.finish() }
}
